/**
 * The disk tier of a node's object store: values the memory tier has no room
 * for, written to files under one folder. Small values are appended to shared
 * segment files; a big one gets a file of its own. A file is deleted once every
 * value in it is freed, and a segment that is mostly freed space is compacted.
 * Writes and reads are synchronous: the store's memory bound holds at every
 * step, and a value is on disk before its memory is let go.
 */

import {
  closeSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readSync,
  rmSync,
  unlinkSync,
  write,
  writeSync,
} from 'node:fs'
import { join } from 'node:path'
import type { EncodedValue } from '../../sdk/codec.ts'
import { BadRequestError, ObjectStoreFullError } from '../../sdk/errors.ts'
import { warn } from '../log.ts'

export interface SpillOptions {
  /** The folder for spill files; created, and emptied of what an earlier run left. */
  dir: string
  /** Bytes of spill files allowed on disk (Infinity: as much as the disk takes). */
  limitBytes: number
}

/** A segment fills up to this size; a value of OWN_FILE_BYTES or more gets a file of its own, freed the moment it is. */
const SEGMENT_BYTES = 4 * 1024 * 1024
const OWN_FILE_BYTES = 64 * 1024

interface SpillFile {
  readonly path: string
  /** Bytes written to the file, freed ones included: what it takes on disk. */
  size: number
  /** Bytes of values in it not yet freed. */
  liveBytes: number
  readonly ids: Set<string>
}

interface Location {
  file: SpillFile
  offset: number
  length: number
  kind: EncodedValue['kind']
}

/** Where a spilled value is, opened for reading. */
export interface SpilledFile {
  fd: number
  offset: number
  length: number
  kind: EncodedValue['kind']
}

export interface SpillStats {
  count: number
  /** Bytes of the values on disk. */
  bytes: number
  /** Bytes the spill files take, freed space in segments included. */
  fileBytes: number
}

export class SpillStore {
  readonly #dir: string
  readonly #limit: number
  readonly #where = new Map<string, Location>()
  #active: { file: SpillFile; fd: number } | undefined
  #nextFile = 1
  #fileBytes = 0
  #bytes = 0
  /** Bytes being written by writeFrom, counted against the limit. */
  #reserved = 0

  constructor(options: SpillOptions) {
    if (!(options.limitBytes >= 0)) throw new TypeError('options.limitBytes must be a non-negative number')
    this.#dir = options.dir
    this.#limit = options.limitBytes
    rmSync(this.#dir, { recursive: true, force: true })
    mkdirSync(this.#dir, { recursive: true })
  }

  has(id: string): boolean {
    return this.#where.has(id)
  }

  /**
   * Writes a value to disk. Throws ObjectStoreFullError, with nothing written,
   * when the spill limit or the disk has no room for it.
   */
  write(id: string, value: EncodedValue): void {
    this.#append(id, value, true)
  }

  /**
   * Writes `length` bytes arriving in `chunks` (a request body) to a file of
   * their own, never holding them all in memory. Throws ObjectStoreFullError,
   * with nothing kept, when they do not fit; any other error of `chunks` too.
   */
  async writeFrom(id: string, length: number, chunks: AsyncIterable<Uint8Array>): Promise<void> {
    if (this.#where.has(id)) throw new Error(`object ${id} is on disk already`)
    this.#checkRoom(length)
    const { file, fd } = this.#openFile()
    this.#reserved += length
    let written = 0
    try {
      for await (const chunk of chunks) {
        if (written + chunk.byteLength > length)
          throw new BadRequestError('the body is longer than its Content-Length')
        // Written as it comes: the loop only goes on once the chunk is on its way to disk.
        await new Promise<void>((resolve, reject) =>
          write(fd, chunk, 0, chunk.byteLength, written, (err) =>
            err ? reject(diskError(err, length)) : resolve(),
          ),
        )
        written += chunk.byteLength
      }
      if (written !== length) throw new BadRequestError('the body is shorter than its Content-Length')
    } catch (err) {
      this.#dropFile(file)
      throw err
    } finally {
      this.#reserved -= length
      closeSync(fd)
    }
    file.size = length
    file.liveBytes = length
    file.ids.add(id)
    this.#fileBytes += length
    this.#bytes += length
    this.#where.set(id, { file, offset: 0, length, kind: 'bytes' })
  }

  /** An open descriptor on a value's bytes, for streaming it out; the caller closes it. */
  open(id: string): SpilledFile | undefined {
    const at = this.#where.get(id)
    if (!at) return undefined
    return { fd: openSync(at.file.path, 'r'), offset: at.offset, length: at.length, kind: at.kind }
  }

  #checkRoom(length: number): void {
    if (this.#fileBytes + this.#reserved + length > this.#limit) {
      throw new ObjectStoreFullError(
        `object store full: ${length} bytes do not fit in memory, and the spill limit of ${this.#limit} bytes is reached`,
      )
    }
  }

  /** Writes a value; `limited`: refused past the spill limit (compaction, which frees more than it writes, is not). */
  #append(id: string, value: EncodedValue, limited: boolean): void {
    if (this.#where.has(id)) return
    const data = value.kind === 'json' ? Buffer.from(value.text) : value.bytes
    const length = data.byteLength
    if (limited) this.#checkRoom(length)
    const own = length >= OWN_FILE_BYTES
    const target = own ? this.#openFile() : this.#segmentFor(length)
    const offset = target.file.size
    try {
      writeAll(target.fd, data, offset)
    } catch (err) {
      try {
        ftruncateSync(target.fd, offset)
      } catch {}
      if (own) this.#dropFile(target.file)
      throw diskError(err, length)
    } finally {
      if (own) closeSync(target.fd)
    }
    target.file.size += length
    target.file.liveBytes += length
    target.file.ids.add(id)
    this.#fileBytes += length
    this.#bytes += length
    this.#where.set(id, { file: target.file, offset, length, kind: value.kind })
  }

  /** Reads a value back: JSON as text, bytes into shared memory (or a plain buffer if not `shared`). */
  read(id: string, shared = true): EncodedValue | undefined {
    const at = this.#where.get(id)
    if (!at) return undefined
    if (at.kind === 'json')
      return { kind: 'json', text: this.#readInto(at, Buffer.allocUnsafe(at.length)).toString() }
    const into = shared ? new Uint8Array(new SharedArrayBuffer(at.length)) : new Uint8Array(at.length)
    return { kind: 'bytes', bytes: this.#readInto(at, into) }
  }

  /** Frees a value's place on disk. */
  remove(id: string): void {
    const at = this.#where.get(id)
    if (!at) return
    this.#where.delete(id)
    this.#bytes -= at.length
    const { file } = at
    file.ids.delete(id)
    file.liveBytes -= at.length
    if (file === this.#active?.file) return
    if (file.ids.size === 0) this.#dropFile(file)
    else if (file.liveBytes < file.size / 2) this.#compact(file)
  }

  stats(): SpillStats {
    return { count: this.#where.size, bytes: this.#bytes, fileBytes: this.#fileBytes }
  }

  /** Deletes every spill file and the folder. */
  close(): void {
    if (this.#active) closeSync(this.#active.fd)
    this.#active = undefined
    this.#where.clear()
    rmSync(this.#dir, { recursive: true, force: true })
  }

  #openFile(): { file: SpillFile; fd: number } {
    const path = join(this.#dir, `${this.#nextFile++}.spill`)
    let fd: number
    try {
      fd = openSync(path, 'w+')
    } catch (err) {
      throw diskError(err, 0)
    }
    return { file: { path, size: 0, liveBytes: 0, ids: new Set() }, fd }
  }

  /** The segment being filled, sealing it and starting another if `length` does not fit. */
  #segmentFor(length: number): { file: SpillFile; fd: number } {
    const active = this.#active
    if (active && active.file.size + length <= SEGMENT_BYTES) return active
    if (active) {
      closeSync(active.fd)
      if (active.file.ids.size === 0) this.#dropFile(active.file)
    }
    this.#active = this.#openFile()
    return this.#active
  }

  #readInto<T extends Uint8Array>(at: Location, into: T): T {
    const fd = this.#active?.file === at.file ? this.#active.fd : openSync(at.file.path, 'r')
    try {
      let done = 0
      while (done < at.length) {
        const n = readSync(fd, into, done, at.length - done, at.offset + done)
        if (n === 0) throw new Error(`spill file ${at.file.path} is shorter than expected`)
        done += n
      }
    } finally {
      if (fd !== this.#active?.fd) closeSync(fd)
    }
    return into
  }

  /** Moves the live values of a mostly freed segment into the active one, and deletes it. */
  #compact(file: SpillFile): void {
    for (const id of [...file.ids]) {
      const value = this.read(id) as EncodedValue
      const at = this.#where.get(id) as Location
      this.#where.delete(id)
      this.#bytes -= at.length
      file.ids.delete(id)
      file.liveBytes -= at.length
      try {
        this.#append(id, value, false)
      } catch {
        // No room to move it: it stays where it is, and so does the segment.
        this.#where.set(id, at)
        this.#bytes += at.length
        file.ids.add(id)
        file.liveBytes += at.length
        return
      }
    }
    this.#dropFile(file)
  }

  #dropFile(file: SpillFile): void {
    this.#fileBytes -= file.size
    try {
      unlinkSync(file.path)
    } catch {}
  }
}

function writeAll(fd: number, data: Uint8Array, position: number): void {
  let done = 0
  while (done < data.byteLength) done += writeSync(fd, data, done, data.byteLength - done, position + done)
}

/** A failed write as the store reports it: a full disk is OBJECT_STORE_FULL. */
/** Why a spill failed, as the caller's error; said in the platform's log too. */
function diskError(err: unknown, length: number): Error {
  const code = (err as NodeJS.ErrnoException).code
  warn('a value could not be spilled to disk', { bytes: length, code, cause: err })
  if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'EFBIG') {
    return new ObjectStoreFullError(
      `object store full: no room on disk to spill ${length} more bytes (${code})`,
    )
  }
  return err as Error
}
