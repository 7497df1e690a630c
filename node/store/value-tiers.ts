/**
 * Where a node's object values are: in memory, in an lru-cache bounded by
 * their encoded size, and on disk (a SpillStore) for those memory had no room
 * for. Room is made before a value goes in: the least recently used values are
 * written to disk first (once: a value read back keeps its copy on disk), and
 * only when the disk has no room either does storing fail, with
 * OBJECT_STORE_FULL, before anything was let go.
 */
import { LRUCache } from 'lru-cache'
import { type EncodedValue, sizeOf } from '../../sdk/codec.ts'
import { ObjectStoreFullError } from '../../sdk/errors.ts'
import type { SpilledFile, SpillStore } from './spill.ts'

/**
 * What a value in memory costs beyond its encoded bytes: its cache entry, and
 * for bytes the backing store of their own SharedArrayBuffer (about 750 bytes
 * measured on Node 20, whatever the size).
 */
const JSON_OVERHEAD = 128
const BYTES_OVERHEAD = 896

/** The memory a value takes when it is kept in memory. */
export function footprint(value: EncodedValue): number {
  return sizeOf(value) + (value.kind === 'bytes' ? BYTES_OVERHEAD : JSON_OVERHEAD)
}

export interface ValueTiersOptions {
  /** Bytes of values kept in memory. */
  maxBytes: number
  /** Where values go when memory is full; without it, a full memory is OBJECT_STORE_FULL. */
  spill?: SpillStore | undefined
  /**
   * Whether a value about to leave memory may be dropped rather than written
   * to disk (a copy of an object owned elsewhere that nothing needs); if so,
   * `drop` is called to forget its object.
   */
  droppable?: (id: string) => boolean
  drop?: (id: string) => void
  /** Told of the size of every value that leaves memory (spilled, removed or dropped). */
  released?: (bytes: number) => void
  /** Bytes of the bound taken by other things (the store's records of its objects): values get the rest. */
  reserved?: () => number
}

export interface TierCounts {
  /** Values in memory, and their bytes. */
  memory: { count: number; bytes: number }
  /** Values on disk, and their bytes. */
  disk: { count: number; bytes: number }
  /** Since the start: values written to disk, and read back. */
  spills: { count: number; bytes: number }
  restores: { count: number; bytes: number }
}

export class ValueTiers {
  readonly #memory: LRUCache<string, EncodedValue>
  readonly #maxBytes: number
  readonly #spill: SpillStore | undefined
  readonly #droppable: (id: string) => boolean
  readonly #drop: (id: string) => void
  readonly #reserved: () => number
  #memoryBytes = 0
  readonly #spills = { count: 0, bytes: 0 }
  readonly #restores = { count: 0, bytes: 0 }

  constructor(options: ValueTiersOptions) {
    if (!(options.maxBytes > 0)) throw new TypeError('options.maxBytes must be a positive number')
    this.#maxBytes = options.maxBytes
    this.#spill = options.spill
    this.#droppable = options.droppable ?? (() => false)
    this.#drop = options.drop ?? (() => {})
    this.#reserved = options.reserved ?? (() => 0)
    const released = options.released
    this.#memory = new LRUCache<string, EncodedValue>({
      maxSize: options.maxBytes,
      sizeCalculation: footprint,
      // Room is made before every set (#makeRoom); this only counts what leaves.
      dispose: (value) => {
        const size = sizeOf(value)
        this.#memoryBytes -= size
        released?.(size)
      },
    })
  }

  /** Keeps a new value: in memory if it can fit there, else on disk. Throws ObjectStoreFullError if neither has room. */
  keep(id: string, value: EncodedValue): void {
    if (footprint(value) <= this.#limit()) {
      this.#toMemory(id, value)
      return
    }
    if (!this.#spill) throw this.#full(footprint(value))
    this.#spill.write(id, value)
    this.#counted(this.#spills, sizeOf(value))
    // The bound may have shrunk meanwhile (more records): memory goes back under it, if the disk lets it.
    try {
      this.#makeRoom(0)
    } catch (err) {
      if (!(err instanceof ObjectStoreFullError)) throw err
    }
  }

  /**
   * A value, read back from disk if it was spilled: into memory again
   * (`keep`), or, for a value on its way out of this process, just for the
   * caller (bytes then not in shared memory).
   */
  get(id: string, keep = true): EncodedValue | undefined {
    const inMemory = this.#memory.get(id)
    if (inMemory) return inMemory
    const spilled = this.#spill?.read(id, keep)
    if (!spilled) return undefined
    this.#counted(this.#restores, sizeOf(spilled))
    if (!keep) return spilled
    try {
      this.#toMemory(id, spilled)
    } catch (err) {
      if (!(err instanceof ObjectStoreFullError)) throw err
      // No room in memory even after spilling others: it is read from disk each time.
    }
    return spilled
  }

  /** Forgets a value, in memory and on disk. */
  remove(id: string): void {
    this.#memory.delete(id)
    this.#spill?.remove(id)
  }

  /**
   * Whether a byte value of `length` had better go to disk as it arrives than
   * through memory: when it is big beside the memory (an eighth of it or
   * more) and memory has no room for it as things stand.
   */
  streamsToDisk(length: number): boolean {
    const size = length + BYTES_OVERHEAD
    return (
      this.#spill !== undefined &&
      size > this.#maxBytes / 8 &&
      size > this.#limit() - this.#memory.calculatedSize
    )
  }

  /** Writes `length` bytes arriving in `chunks` straight to disk. Throws ObjectStoreFullError when they do not fit. */
  async keepFrom(id: string, length: number, chunks: AsyncIterable<Uint8Array>): Promise<void> {
    if (!this.#spill) throw this.#full(length)
    await this.#spill.writeFrom(id, length, chunks)
    this.#counted(this.#spills, length)
  }

  /** An open descriptor on a value that is on disk and not in memory, for streaming it out; the caller closes it. */
  openOnDisk(id: string): SpilledFile | undefined {
    if (this.#memory.has(id)) return undefined
    const file = this.#spill?.open(id)
    if (file) this.#counted(this.#restores, file.length)
    return file
  }

  /** Whether a value is in memory (else, if kept, it is on disk). */
  inMemory(id: string): boolean {
    return this.#memory.has(id)
  }

  /** Ids of values in memory of at least `minBytes`, at most `limit` of them. */
  largestInMemory(minBytes: number, limit: number): string[] {
    const ids: string[] = []
    for (const [id, value] of this.#memory.entries()) {
      if (ids.length >= limit) break
      if (sizeOf(value) >= minBytes) ids.push(id)
    }
    return ids
  }

  /** Bytes of values in memory. */
  get memoryBytes(): number {
    return this.#memoryBytes
  }

  counts(): TierCounts {
    const disk = this.#spill?.stats()
    return {
      memory: { count: this.#memory.size, bytes: this.#memoryBytes },
      disk: { count: disk?.count ?? 0, bytes: disk?.bytes ?? 0 },
      spills: { ...this.#spills },
      restores: { ...this.#restores },
    }
  }

  /** Deletes the spill files. */
  close(): void {
    this.#spill?.close()
  }

  #counted(what: { count: number; bytes: number }, bytes: number): void {
    what.count += 1
    what.bytes += bytes
  }

  /** The bytes values may take in memory now. */
  #limit(): number {
    return this.#maxBytes - this.#reserved()
  }

  #toMemory(id: string, value: EncodedValue): void {
    const need = footprint(value)
    if (need > this.#limit()) throw this.#full(need)
    this.#makeRoom(need)
    this.#memory.set(id, value)
    this.#memoryBytes += sizeOf(value)
  }

  /**
   * Frees `need` bytes of memory: the least recently used values go to disk
   * (droppable ones are dropped instead). Throws ObjectStoreFullError if the
   * disk has no room; what moved so far stays moved.
   */
  #makeRoom(need: number): void {
    while (this.#memory.calculatedSize + need > this.#limit()) {
      const id = this.#memory.rkeys().next().value as string | undefined
      if (id === undefined) return
      if (this.#droppable(id)) {
        this.#memory.delete(id)
        this.#drop(id)
        continue
      }
      if (!this.#spill) throw this.#full(need)
      if (!this.#spill.has(id)) {
        const value = this.#memory.peek(id) as EncodedValue
        this.#spill.write(id, value)
        this.#counted(this.#spills, sizeOf(value))
      }
      this.#memory.delete(id)
    }
  }

  #full(need: number): ObjectStoreFullError {
    return new ObjectStoreFullError(
      `object store full: ${need} bytes do not fit in ${this.#maxBytes} bytes of memory, and nothing spills to disk`,
    )
  }
}
