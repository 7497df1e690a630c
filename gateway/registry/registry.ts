/**
 * The function registry: every deployed function, by name, with its last few
 * versions. A version is a bundle (one ES module) named by the hash of its
 * code; it is written where worker threads can import it, checked by
 * importing it in a throwaway thread (a default-exported function is a task,
 * a class an actor), and kept, if the registry has a keeper (the head's
 * state), so that a head started again serves it again. A call names a
 * function (its latest version) or `name@version`.
 */

import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { warn } from '../../node/log.ts'
import { BadRequestError, FunctionNotFoundError } from '../../sdk/errors.ts'
import { type CallOptions, checkCallOptions } from '../../sdk/types.ts'
import type { SecretStore } from '../secrets.ts'
import { bundleFunction, findEntry, versionOf } from './bundle.ts'
import { inspectBundles } from './inspect.ts'

export const FUNCTION_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/
const VERSION = /^[0-9a-f]{12}$/
/** Versions kept of each function, by default. */
export const KEEP_VERSIONS = 5

export type FunctionKind = 'function' | 'actor'

/** A deployed function as the API lists it. */
export interface FunctionInfo {
  name: string
  kind: FunctionKind
  version: string
  config: CallOptions
  deployedAt: string
}

/** A deployed version with what a node needs to run it. */
export interface FunctionRecord extends FunctionInfo {
  /** `name@version`: what calls of it are placed as. */
  ref: string
  /** file: URL of the bundled module. */
  url: string
  /** Its calls' variables: config.env and the granted secrets' values (none: undefined). Never listed. */
  env: Readonly<Record<string, string>> | undefined
  /** An actor class's methods (public: not its constructor, nor names starting with _). */
  methods: string[]
}

/** Where deployed versions are kept (the head's state), by key: `name` (its versions) and `name@version` (code). */
export interface BundleKeeper {
  set(key: string, value: string): void
  delete(key: string): void
}

export interface FunctionRegistryOptions {
  /** Folder the bundles are written to. */
  bundleDir: string
  /** Versions kept of each function (default 5). */
  keepVersions?: number
  keeper?: BundleKeeper | undefined
  /** The secrets functions may be granted (`config.secrets`). */
  secrets?: SecretStore | undefined
  /** Reports folders that could not be deployed (default: the platform's log). */
  warn?: (message: string) => void
}

export interface Deployed {
  record: FunctionRecord
  /** False if that content was the latest version already. */
  created: boolean
}

/** A function name, or `name@version`, split; undefined if malformed. */
export function parseRef(ref: string): { name: string; version?: string } | undefined {
  const at = ref.indexOf('@')
  const name = at < 0 ? ref : ref.slice(0, at)
  if (!FUNCTION_NAME.test(name)) return undefined
  if (at < 0) return { name }
  const version = ref.slice(at + 1)
  return VERSION.test(version) ? { name, version } : undefined
}

/** Checks a name for a deploy: 400 naming the rule if it does not follow it. */
export function checkFunctionName(name: string): string {
  if (!FUNCTION_NAME.test(name)) {
    throw new BadRequestError(
      `bad function name ${JSON.stringify(name)}: 1 to 63 of a-z, 0-9, _ and -, starting with a letter or digit`,
    )
  }
  return name
}

interface Pending {
  name: string
  code: string
  version: string
  deployedAt: string
  url: string
}

export class FunctionRegistry {
  /** Each function's kept versions, oldest first; the last is the latest. */
  readonly #functions = new Map<string, FunctionRecord[]>()
  readonly #bundleDir: string
  readonly #keep: number
  readonly #keeper: BundleKeeper | undefined
  readonly #warn: (message: string) => void
  readonly #listeners = new Set<() => void>()
  readonly #secrets: SecretStore | undefined
  #revision = 0

  constructor(options: FunctionRegistryOptions) {
    this.#bundleDir = options.bundleDir
    this.#keep = options.keepVersions ?? KEEP_VERSIONS
    if (!(Number.isInteger(this.#keep) && this.#keep >= 1))
      throw new TypeError('keepVersions must be a positive integer')
    this.#keeper = options.keeper
    this.#warn = options.warn ?? ((m) => warn(m))
    this.#secrets = options.secrets
    // A secret set or removed reaches the calls of every version that is granted it.
    this.#secrets?.onChange(() => {
      for (const versions of this.#functions.values()) for (const v of versions) v.env = this.#envOf(v.config)
      this.#changed()
    })
  }

  /** Deploys every function folder under `dir`; a folder that fails is reported and skipped. */
  async deployAll(dir: string): Promise<void> {
    const entries = await readdir(dir, { withFileTypes: true })
    const folders = entries.filter(
      (e) =>
        e.isDirectory() &&
        e.name !== 'node_modules' &&
        FUNCTION_NAME.test(e.name) &&
        findEntry(join(dir, e.name)),
    )
    const bundles = await Promise.all(
      folders.map(async (e) => {
        try {
          return { name: e.name, code: (await bundleFunction(findEntry(join(dir, e.name)) as string)).code }
        } catch (err) {
          this.#warn(`function ${e.name} not deployed: ${(err as Error).message}`)
          return undefined
        }
      }),
    )
    const results = await this.#deploy(bundles.filter((b) => b !== undefined))
    for (const result of results) {
      if (result instanceof Error) this.#warn(`function not deployed: ${result.message}`)
    }
  }

  /** Bundles one folder and deploys it under `name` as its latest version. */
  async deploy(name: string, folder: string): Promise<Deployed> {
    checkFunctionName(name)
    const entry = findEntry(folder)
    if (!entry) throw new BadRequestError(`${folder} has no index.ts, index.mts, index.js or index.mjs`)
    const { code } = await bundleFunction(entry)
    return this.deployCode(name, code)
  }

  /**
   * Deploys a bundle (one ES module, as `magpie deploy` makes it) under
   * `name` as its latest version; 400 if it does not load, and the versions
   * before it stay as they were.
   */
  async deployCode(name: string, code: string): Promise<Deployed> {
    checkFunctionName(name)
    const [result] = await this.#deploy([{ name, code }])
    if (result instanceof Error) throw result
    return result as Deployed
  }

  /** Serves again the versions a keeper holds (`kept`: its entries, by key), latest last; without keeping them again. */
  async restore(kept: ReadonlyMap<string, string>): Promise<void> {
    const pending: Pending[] = []
    for (const [key, text] of kept) {
      if (key.includes('@') || !FUNCTION_NAME.test(key)) continue
      let versions: Array<{ version: string; deployedAt: string }>
      try {
        versions = (JSON.parse(text) as { versions: Array<{ version: string; deployedAt: string }> }).versions
        if (!Array.isArray(versions)) throw new Error('no versions')
      } catch {
        this.#warn(`function ${key} kept from an earlier start could not be read, and is dropped`)
        continue
      }
      for (const { version, deployedAt } of versions) {
        const code = kept.get(`${key}@${version}`)
        if (code === undefined || versionOf(code) !== version) {
          this.#warn(
            `version ${version} of ${key} kept from an earlier start is missing or damaged, and is dropped`,
          )
          continue
        }
        pending.push(await this.#write(key, code, deployedAt))
      }
    }
    const answers = await inspectBundles(pending.map((p) => p.url))
    pending.forEach((p, i) => {
      const record = this.#recordOf(p, answers[i] ?? { error: 'not checked' })
      if (record instanceof Error)
        this.#warn(`function ${p.name} kept from an earlier start: ${record.message}`)
      else this.#add(record, false)
    })
    this.#changed()
  }

  /** The latest version of a function, or the version `name@version` names. */
  get(ref: string): FunctionRecord | undefined {
    const parsed = parseRef(ref)
    const versions = parsed && this.#functions.get(parsed.name)
    if (!versions) return undefined
    if (parsed.version === undefined) return versions[versions.length - 1]
    return versions.find((v) => v.version === parsed.version)
  }

  /** The kept versions of a function, newest first. */
  versions(name: string): FunctionRecord[] {
    return [...(this.#functions.get(name) ?? [])].reverse()
  }

  /** The latest version of every function, by name. */
  list(): FunctionRecord[] {
    return [...this.#functions.values()]
      .map((versions) => versions[versions.length - 1] as FunctionRecord)
      .sort((a, b) => a.name.localeCompare(b.name))
  }

  names(): string[] {
    return [...this.#functions.keys()]
  }

  /** Counts changes: a node that saw another revision asks for the list again. */
  get revision(): number {
    return this.#revision
  }

  /** Removes a function and its versions: new calls of it are refused; running ones finish. */
  remove(name: string): void {
    const versions = this.#functions.get(name)
    if (!versions) throw new FunctionNotFoundError(`no function named ${name}`)
    this.#functions.delete(name)
    for (const v of versions) this.#keeper?.delete(v.ref)
    this.#keeper?.delete(name)
    this.#changed()
  }

  /** The code of a version, for a node that needs it. */
  async code(ref: string): Promise<string | undefined> {
    const record = this.get(ref)
    return record && readFile(new URL(record.url), 'utf8')
  }

  /** Calls `listener` after every change. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  async #deploy(bundles: Array<{ name: string; code: string }>): Promise<Array<Deployed | Error>> {
    const results: Array<Deployed | Error | Pending> = []
    for (const { name, code } of bundles) {
      const version = versionOf(code)
      const latest = this.get(name)
      if (latest?.version === version) results.push({ record: latest, created: false })
      else results.push(await this.#write(name, code, new Date().toISOString()))
    }
    const pending = results.filter((r): r is Pending => 'code' in r)
    const answers = await inspectBundles(pending.map((p) => p.url))
    const out = results.map((r): Deployed | Error => {
      if (!('code' in r)) return r
      const record = this.#recordOf(r, answers[pending.indexOf(r)] ?? { error: 'not checked' })
      if (record instanceof Error) {
        // A refused bundle leaves nothing behind (unless it is a kept version's file).
        if (!this.get(`${r.name}@${r.version}`)) void rm(new URL(r.url), { force: true })
        return record
      }
      this.#add(record, true, r.code)
      return { record, created: true }
    })
    if (pending.length > 0) this.#changed()
    return out
  }

  async #write(name: string, code: string, deployedAt: string): Promise<Pending> {
    const version = versionOf(code)
    await mkdir(this.#bundleDir, { recursive: true })
    const file = join(this.#bundleDir, `${name}-${version}.mjs`)
    await writeFile(file, code)
    return { name, code, version, deployedAt, url: pathToFileURL(file).href }
  }

  #recordOf(p: Pending, answer: Awaited<ReturnType<typeof inspectBundles>>[number]): FunctionRecord | Error {
    if ('error' in answer) return new BadRequestError(`${p.name}: the bundle does not load: ${answer.error}`)
    let config: CallOptions
    try {
      config = checkCallOptions(answer.config, `${p.name} config`, true)
    } catch (err) {
      return new BadRequestError((err as Error).message)
    }
    const { name, version, deployedAt, url } = p
    const env = this.#envOf(config)
    return {
      name,
      kind: answer.kind,
      version,
      config,
      deployedAt,
      url,
      ref: `${name}@${version}`,
      env,
      methods: answer.methods,
    }
  }

  /** Makes `record` the latest version of its function, keeping the last few. */
  #add(record: FunctionRecord, keep: boolean, code?: string): void {
    const versions = (this.#functions.get(record.name) ?? []).filter((v) => v.version !== record.version)
    versions.push(record)
    const dropped = versions.splice(0, Math.max(0, versions.length - this.#keep))
    this.#functions.set(record.name, versions)
    if (!keep || !this.#keeper) return
    if (code !== undefined) this.#keeper.set(record.ref, code)
    for (const v of dropped) this.#keeper.delete(v.ref)
    const index = versions.map((v) => ({ version: v.version, deployedAt: v.deployedAt }))
    this.#keeper.set(record.name, JSON.stringify({ versions: index }))
  }

  /** A version's variables: its config.env, then the values of the secrets it is granted that are set. */
  #envOf(config: CallOptions): Readonly<Record<string, string>> | undefined {
    const granted = (config.secrets ?? []).flatMap((name) => {
      const value = this.#secrets?.value(name)
      return value === undefined ? [] : [[name, value] as const]
    })
    if (!config.env && granted.length === 0) return undefined
    return Object.freeze({ ...config.env, ...Object.fromEntries(granted) })
  }

  #changed(): void {
    this.#revision += 1
    for (const listener of this.#listeners) listener()
  }
}

/** The public view of a record (without where its bundle lives). */
export function publicInfo(record: FunctionRecord): FunctionInfo & { methods?: string[] } {
  const { name, kind, version, config, deployedAt } = record
  return kind === 'actor'
    ? { name, kind, version, config, deployedAt, methods: record.methods }
    : { name, kind, version, config, deployedAt }
}
