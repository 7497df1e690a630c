/**
 * The function registry: every deployed function folder, bundled, inspected
 * (a default-exported function is a task, a class an actor) and written where
 * worker threads can import it.
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { BadRequestError } from '../../sdk/errors.ts'
import { type CallOptions, checkCallOptions } from '../../sdk/types.ts'
import { bundleFunction, findEntry } from './bundle.ts'

export const FUNCTION_NAME = /^[a-z][a-z0-9-]{0,62}$/

export type FunctionKind = 'function' | 'actor'

/** A deployed function as the API lists it. */
export interface FunctionInfo {
  name: string
  kind: FunctionKind
  version: string
  config: CallOptions
  deployedAt: string
}

/** A deployed function with what a node needs to run it. */
export interface FunctionRecord extends FunctionInfo {
  /** file: URL of the bundled module. */
  url: string
}

/** A deployed bundle as a head keeps it in its state. */
export interface KeptBundle {
  code: string
  version: string
  deployedAt: string
}

export interface FunctionRegistryOptions {
  /** Folder the bundles are written to. */
  bundleDir: string
  /** Told of every bundle deployed (not of those installed from a kept copy). */
  onDeploy?: (name: string, bundle: KeptBundle) => void
  /** Reports folders that could not be deployed (default: console.warn). */
  warn?: (message: string) => void
}

export class FunctionRegistry {
  readonly #records = new Map<string, FunctionRecord>()
  readonly #bundleDir: string
  readonly #warn: (message: string) => void
  readonly #listeners = new Set<() => void>()
  readonly #onDeploy: (name: string, bundle: KeptBundle) => void

  constructor(options: FunctionRegistryOptions) {
    this.#bundleDir = options.bundleDir
    this.#onDeploy = options.onDeploy ?? (() => {})
    this.#warn = options.warn ?? ((m) => console.warn(m))
  }

  /** Deploys every function folder under `dir`; a folder that fails is reported and skipped. */
  async deployAll(dir: string): Promise<void> {
    const entries = await readdir(dir, { withFileTypes: true })
    const folders = entries.filter((e) => e.isDirectory() && FUNCTION_NAME.test(e.name))
    await Promise.all(
      folders.map(async (e) => {
        const folder = join(dir, e.name)
        if (!findEntry(folder)) return
        try {
          await this.deploy(e.name, folder)
        } catch (err) {
          this.#warn(`function ${e.name} not deployed: ${(err as Error).message}`)
        }
      }),
    )
  }

  /** Bundles and deploys one folder under `name`, replacing any earlier version. */
  async deploy(name: string, folder: string): Promise<FunctionRecord> {
    if (!FUNCTION_NAME.test(name)) throw new BadRequestError(`bad function name: ${name}`)
    const entry = findEntry(folder)
    if (!entry) throw new BadRequestError(`${folder} has no index.ts, index.mts, index.js or index.mjs`)
    const { code, version } = await bundleFunction(entry)
    // The same content again changes nothing.
    const known = this.#records.get(name)
    if (known?.version === version) return known
    const bundle = { code, version, deployedAt: new Date().toISOString() }
    const record = await this.install(name, bundle, entry)
    this.#onDeploy(name, bundle)
    return record
  }

  /** Installs a bundle already made (kept by a head from an earlier start) under `name`. */
  async install(name: string, bundle: KeptBundle, from = `the bundle of ${name}`): Promise<FunctionRecord> {
    if (!FUNCTION_NAME.test(name)) throw new BadRequestError(`bad function name: ${name}`)
    const { code, version, deployedAt } = bundle
    await mkdir(this.#bundleDir, { recursive: true })
    const file = join(this.#bundleDir, `${name}-${version}.mjs`)
    await writeFile(file, code)
    const url = pathToFileURL(file).href
    const mod = (await import(url)) as { default?: unknown; config?: unknown }
    if (typeof mod.default !== 'function')
      throw new BadRequestError(`${from} has no default-exported function or class`)
    const kind: FunctionKind = /^class[\s{]/.test(Function.prototype.toString.call(mod.default))
      ? 'actor'
      : 'function'
    const config = checkCallOptions(mod.config, `${name} config`)
    const record: FunctionRecord = { name, kind, version, config, deployedAt, url }
    this.#records.set(name, record)
    for (const listener of this.#listeners) listener()
    return record
  }

  get(name: string): FunctionRecord | undefined {
    return this.#records.get(name)
  }

  list(): FunctionRecord[] {
    return [...this.#records.values()].sort((a, b) => a.name.localeCompare(b.name))
  }

  names(): string[] {
    return [...this.#records.keys()]
  }

  /** Calls `listener` after every deploy. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }
}

/** The public view of a record (without where its bundle lives). */
export function publicInfo(record: FunctionRecord): FunctionInfo {
  const { url: _url, ...info } = record
  return info
}
