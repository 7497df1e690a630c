/**
 * A joined node's functions, as its head deploys them: the node needs no
 * functions folder. It learns the latest version of each function whenever
 * the head's revision of the list changes (told with every heartbeat), and
 * fetches the code of a version the first time it needs it, once, into its
 * bundle folder: the latest ones as soon as they are deployed, any other
 * (a call pinned to an older version) when such a call comes.
 */
import { mkdir, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { CatalogEntry, FunctionCatalog } from '../../node/task.ts'
import { backoffDelay } from '../../sdk/backoff.ts'
import { type InternalClient, isTransient } from '../client.ts'
import { warn } from '../log.ts'
import type { FunctionCode } from '../protocol.ts'

/** Tries of a version's code while the head does not answer. */
const ASK_TRIES = 8

/** Variables as a call takes them: none is undefined. */
function envOf(env: Record<string, string>): Readonly<Record<string, string>> | undefined {
  return Object.keys(env).length === 0 ? undefined : Object.freeze({ ...env })
}

export interface RemoteCatalogOptions {
  client: InternalClient
  head: string
  /** Where fetched bundles are written for worker threads to import. */
  bundleDir: string
}

export class RemoteCatalog implements FunctionCatalog {
  readonly #o: RemoteCatalogOptions
  /** The latest version of each function, by name, as the head last said. */
  #latest = new Map<string, string>()
  /** The versions this node has, by `name@version`. */
  readonly #loaded = new Map<string, CatalogEntry>()
  /** Versions being fetched now, so that two asks of one version (a call's, the list's) write its file once. */
  readonly #fetching = new Map<string, Promise<boolean>>()
  readonly #listeners = new Set<() => void>()
  #revision = -1
  /** The latest revision the head has announced. */
  #announced = -1
  #updating: Promise<void> | undefined

  constructor(options: RemoteCatalogOptions) {
    this.#o = options
  }

  get(ref: string): CatalogEntry | undefined {
    const exact = ref.includes('@') ? ref : this.#latest.get(ref)
    return exact === undefined ? undefined : this.#loaded.get(exact)
  }

  /** Fetches a version from the head unless this node has it; false if the head has no such version. */
  ensure(ref: string): Promise<boolean> {
    const exact = ref.includes('@') ? ref : this.#latest.get(ref)
    if (exact === undefined) return Promise.resolve(false)
    return this.#fetch(exact)
  }

  /** The functions whose latest version this node has: what functions here may call by name. */
  names(): string[] {
    return [...this.#latest].filter(([, ref]) => this.#loaded.has(ref)).map(([name]) => name)
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /**
   * The head's list is at `revision`: if this node has another, it asks for
   * the list and fetches the latest versions; resolves once it has them.
   */
  update(revision: number): Promise<void> {
    this.#announced = Math.max(this.#announced, revision)
    if (revision === this.#revision) return Promise.resolve()
    this.#updating ??= this.#refresh().finally(() => {
      this.#updating = undefined
    })
    return this.#updating
  }

  /**
   * Resolves once this node has the latest versions the head last announced
   * (or has tried to get them), so that a call run now finds by name every
   * function it may call: a node that just joined runs nothing before.
   */
  current(): Promise<void> {
    if (this.#revision >= 0 && this.#revision >= this.#announced) return Promise.resolve()
    return this.#updating ?? this.update(Math.max(this.#announced, 0))
  }

  async #refresh(): Promise<void> {
    const { client, head } = this.#o
    try {
      const list = await client.functions(head)
      await Promise.all(list.functions.map((f) => this.#fetch(f.ref)))
      // Secrets set or removed since reach the latest versions' calls now.
      for (const f of list.functions) {
        const entry = this.#loaded.get(f.ref)
        if (entry) entry.env = envOf(f.env)
      }
      this.#latest = new Map(list.functions.map((f) => [f.name, f.ref]))
      this.#revision = list.revision
      for (const listener of this.#listeners) listener()
    } catch (err) {
      // Asked again with the next heartbeat.
      warn('could not get the functions from the head', { cause: err })
    }
  }

  /** Asks the head for a version's code, again while it does not answer (up to about 10 s). */
  async #ask(ref: string): Promise<FunctionCode | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#o.client.functionCode(this.#o.head, ref)
      } catch (err) {
        if (!isTransient(err) || attempt >= ASK_TRIES) throw err
        await new Promise((r) => setTimeout(r, backoffDelay(attempt, { baseMs: 200, maxMs: 2000 })))
      }
    }
  }

  /**
   * Fetches a version's code once, however many ask at once (a heartbeat's
   * refresh and a call that needs it): a second write of the same file, while
   * a thread imports the first, would have it import an empty module.
   */
  #fetch(ref: string): Promise<boolean> {
    if (this.#loaded.has(ref)) return Promise.resolve(true)
    let fetching = this.#fetching.get(ref)
    if (!fetching) {
      fetching = this.#fetchOnce(ref).finally(() => this.#fetching.delete(ref))
      this.#fetching.set(ref, fetching)
    }
    return fetching
  }

  async #fetchOnce(ref: string): Promise<boolean> {
    const found = await this.#ask(ref)
    if (!found) return false
    await mkdir(this.#o.bundleDir, { recursive: true })
    const file = join(this.#o.bundleDir, `${ref.replace('@', '-')}.mjs`)
    // Written aside and renamed into place: a thread never imports half a file.
    const staging = `${file}.${process.pid}.tmp`
    await writeFile(staging, found.code)
    await rename(staging, file)
    this.#loaded.set(ref, { ref, url: pathToFileURL(file).href, config: found.config, env: envOf(found.env) })
    return true
  }
}
