/**
 * The head's state in a folder: one append-only file of changes, one JSON
 * line each (`[ns, key, value]`, or `[ns, key]` for a delete), readable only
 * by its owner. Loading replays it (a last line torn by a kill is skipped)
 * and writes it anew with the live entries only; so does a file that has
 * grown to several times what it holds. Writes reach the operating system,
 * not the disk: the state survives the head being killed, not the machine
 * losing power.
 */
import { type FileHandle, mkdir, open, rename } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { BatchedState, type Change } from './batched.ts'
import { emptySnapshot, NAMESPACES, type Namespace, type StateSnapshot } from './types.ts'

const FILE = 'head-state.jsonl'
/** The file is written anew once it is this many times the size of what it holds... */
const COMPACT_RATIO = 4
/** ...and at least this big. */
const COMPACT_MIN_BYTES = 16 * 2 ** 20
/** Written in pieces of about this many characters. */
const WRITE_CHUNK = 2 ** 20

function parseLine(line: string): Change | undefined {
  try {
    const parsed: unknown = JSON.parse(line)
    if (!Array.isArray(parsed) || !NAMESPACES.includes(parsed[0]) || typeof parsed[1] !== 'string') return
    const [ns, key, value] = parsed as [Namespace, string, unknown]
    return typeof value === 'string' ? { ns, key, value } : { ns, key }
  } catch {
    return undefined
  }
}

function lineOf(change: Change): string {
  return `${JSON.stringify(change.value === undefined ? [change.ns, change.key] : [change.ns, change.key, change.value])}\n`
}

export class FolderState extends BatchedState {
  readonly where: string
  readonly #file: string
  #handle: FileHandle | undefined
  #fileBytes = 0
  /** The bytes of each live entry's line, to know when writing the file anew pays. */
  readonly #live = new Map<string, number>()
  #liveBytes = 0

  constructor(dir: string) {
    super()
    this.where = dir
    this.#file = join(dir, FILE)
  }

  async load(): Promise<StateSnapshot> {
    await mkdir(this.where, { recursive: true })
    const snapshot = await this.#replay()
    await this.#rewrite(snapshot)
    return snapshot
  }

  protected async write(changes: Change[]): Promise<void> {
    if (!this.#handle) throw new Error(`the state in ${this.where} is not open`)
    let text = ''
    for (const change of changes) {
      const line = lineOf(change)
      text += line
      this.#count(change, Buffer.byteLength(line))
    }
    await this.#handle.write(text)
    this.#fileBytes += Buffer.byteLength(text)
    if (this.#fileBytes > COMPACT_MIN_BYTES && this.#fileBytes > COMPACT_RATIO * this.#liveBytes) {
      await this.#rewrite(await this.#replay())
    }
  }

  protected async release(): Promise<void> {
    await this.#handle?.close()
    this.#handle = undefined
  }

  /** The state the file holds. */
  async #replay(): Promise<StateSnapshot> {
    const snapshot = emptySnapshot()
    const handle = await open(this.#file, 'r').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined
      throw err
    })
    if (!handle) return snapshot
    const lines = createInterface({
      input: handle.createReadStream({ autoClose: false }),
      crlfDelay: Infinity,
    })
    try {
      for await (const line of lines) {
        const change = line && parseLine(line)
        if (!change) continue
        if (change.value === undefined) snapshot[change.ns].delete(change.key)
        else snapshot[change.ns].set(change.key, change.value)
      }
    } finally {
      await handle.close()
    }
    return snapshot
  }

  /** Writes the file anew with `snapshot` alone, and appends to it from then on. */
  async #rewrite(snapshot: StateSnapshot): Promise<void> {
    await this.#handle?.close()
    this.#live.clear()
    this.#liveBytes = 0
    const temp = `${this.#file}.new`
    const handle = await open(temp, 'w', 0o600)
    let chunk = ''
    for (const ns of NAMESPACES) {
      for (const [key, value] of snapshot[ns]) {
        const line = lineOf({ ns, key, value })
        chunk += line
        this.#count({ ns, key, value }, Buffer.byteLength(line))
        if (chunk.length >= WRITE_CHUNK) {
          await handle.write(chunk)
          chunk = ''
        }
      }
    }
    await handle.write(chunk)
    await handle.close()
    await rename(temp, this.#file)
    this.#handle = await open(this.#file, 'a', 0o600)
    this.#fileBytes = this.#liveBytes
  }

  #count(change: Change, bytes: number): void {
    const key = `${change.ns}\u0000${change.key}`
    this.#liveBytes -= this.#live.get(key) ?? 0
    if (change.value === undefined) this.#live.delete(key)
    else {
      this.#live.set(key, bytes)
      this.#liveBytes += bytes
    }
  }
}
