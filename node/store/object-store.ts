/**
 * A node's object store: the status of every object this node knows of, the
 * encoded values of finished ones, and how long each must live.
 *
 * Values live in memory (ValueTiers: an lru-cache bounded by their size, what
 * the store keeps of every object counted in); when it is full, the least
 * recently used go to disk (a SpillStore) and come back on access. An object
 * is never dropped while it is needed:
 * - it is pinned while a pending task takes it as an argument, while a value
 *   stored here contains a `$ref` to it, and while some holder (a worker
 *   thread's live ObjectRef) says so;
 * - an object a client could see (the result of a call made from outside, a
 *   put, an object read by a client or another node) lives for its TTL after
 *   it was last seen;
 * - an object made inside a function that nothing pins is freed at once.
 * Only when memory and disk are both full does storing fail, with
 * OBJECT_STORE_FULL, and then nothing stored before is harmed.
 */
import { BYTES_TYPE, contentTypeOf, type EncodedValue, sizeOf } from '../../sdk/codec.ts'
import {
  BadRequestError,
  ObjectStoreFullError,
  type SerializedError,
  serializeError,
} from '../../sdk/errors.ts'
import { Expiries } from './expiries.ts'
import type { SpilledFile, SpillStore } from './spill.ts'
import { ValueTiers } from './value-tiers.ts'
import { isSettled, type ObjectStatus, Waiters } from './waiters.ts'

export { isSettled, type ObjectStatus } from './waiters.ts'

export interface ObjectEntry {
  readonly id: string
  status: ObjectStatus
  error?: SerializedError
  size: number
  contentType: string | null
  function: string | null
  attempts: number
  readonly createdAt: number
  ttlMs: number
  /** The node that holds the value, where another process does. */
  node?: string
  /** Whether the value is stored here (in memory or spilled). */
  stored: boolean
  /** Tasks, containing values and holders that need it. */
  pins: number
  /** A client could have seen it: it lives until this time (0: it lives only while pinned). */
  expiresAt: number
  /** Seen by a client or another process: it keeps a TTL. */
  visible: boolean
  /** A copy of an object owned elsewhere: dropped rather than spilled when memory is full. */
  cached: boolean
  /** Objects this one pins: its arguments while it is pending, the refs in its value once ready. */
  refs: string[] | undefined
  /** The second whose expiry check holds it (0: none). */
  bucket: number
}

/** An object as `magpie memory` shows it. */
export interface HeldObject {
  id: string
  size: number
  contentType: string | null
  function: string | null
  /** Its value in memory here, on disk here, or on another node. */
  where: 'memory' | 'disk' | 'elsewhere'
  /** Calls waiting to run that take it, stored values that contain it, threads' live handles to it. */
  heldBy: { calls: number; values: number; handles: number }
  /** Seconds its TTL has left (null: it lives only while something holds it). */
  ttlS: number | null
}

/** How an object finishes: with a value, ready on another node, or with an error. */
export type SettledAs =
  | { value: EncodedValue }
  | { elsewhere: { size: number; contentType: string } }
  | { error: SerializedError; cancelled?: boolean }

export interface CreateOptions {
  /** Lifetime after a client last saw it, in ms (default: the store's). */
  ttlMs?: number | undefined
  /** Made for a client (a call from outside, a put): it gets a TTL. */
  visible?: boolean
  /** A copy of an object owned elsewhere. */
  cached?: boolean
}

export interface ObjectStoreOptions {
  /** Bytes of values kept in memory. */
  maxBytes: number
  /** Default lifetime of a visible object after it was last seen, in ms. */
  ttlMs: number
  /** Where values go when memory is full; without it, a full memory is OBJECT_STORE_FULL. */
  spill?: SpillStore | undefined
  /** Clock in ms for creation times and TTLs (tests pass a fake one). */
  now?: () => number
  /** Told of the size of every value that leaves memory (spilled, freed or dropped). */
  released?: (bytes: number) => void
  /** Told of each object freed (its entry gone). */
  freed?: (id: string) => void
}

export interface StoreStats {
  count: number
  unfinished: number
  /** Bytes of values in memory. */
  bytes: number
  spilled: { count: number; bytes: number }
  /** Values written to disk and read back since the start. */
  spills: { count: number; bytes: number }
  restores: { count: number; bytes: number }
  freed: number
}

const SWEEP_MS = 1000
/** What the store keeps of each object besides its value (its entry, its place on disk, its expiry), about 350 bytes measured. */
const RECORD_BYTES = 384
const HELD_PATTERN = /"\$(?:ref|actor)"\s*:\s*"([A-Za-z0-9_-]{16,64})"/g

type Listener = (entry: ObjectEntry | undefined) => void

/**
 * The distinct ids a JSON value keeps alive: its `{"$ref": id}` objects, and
 * the actors of its `{"$actor": id}` handles (an actor's id is its
 * constructor's object, whose end may end the actor, see Actors.released).
 */
export function heldIdsInJson(text: string): string[] {
  // One scan of every stored value: most hold no marker at all.
  if (!text.includes('"$')) return []
  const ids = new Set<string>()
  for (const match of text.matchAll(HELD_PATTERN)) ids.add(match[1] as string)
  return [...ids]
}

export class ObjectStore {
  readonly #entries = new Map<string, ObjectEntry>()
  readonly #values: ValueTiers
  readonly #waiters = new Waiters<ObjectEntry>((id) => this.lookup(id))
  readonly #now: () => number
  readonly #onFreed: ((id: string) => void) | undefined
  readonly #ttlMs: number
  readonly #expiries = new Expiries()
  readonly #sweeper: ReturnType<typeof setInterval>
  #unfinished = 0
  #freed = 0

  constructor(options: ObjectStoreOptions) {
    if (!(options.ttlMs > 0)) throw new TypeError('options.ttlMs must be a positive number')
    this.#now = options.now ?? Date.now
    this.#ttlMs = options.ttlMs
    this.#onFreed = options.freed
    this.#values = new ValueTiers({
      maxBytes: options.maxBytes,
      spill: options.spill,
      // Unneeded copies of objects owned elsewhere are dropped rather than spilled.
      droppable: (id) => {
        const entry = this.#entries.get(id)
        return entry?.cached === true && entry.pins === 0
      },
      drop: (id) => {
        const entry = this.#entries.get(id)
        if (entry) this.#free(entry)
      },
      ...(options.released ? { released: options.released } : {}),
      // The records of all objects, spilled ones too, count against the bound.
      reserved: () => this.#entries.size * RECORD_BYTES,
    })
    this.#sweeper = setInterval(() => this.expire(), SWEEP_MS)
    this.#sweeper.unref()
  }

  /** Registers an object to be computed; false if the id is taken. */
  create(id: string, fn: string | null, options: CreateOptions = {}): boolean {
    if (this.has(id)) return false
    this.#entries.set(id, {
      id,
      status: 'pending',
      size: 0,
      contentType: null,
      function: fn,
      attempts: 0,
      createdAt: this.#now(),
      ttlMs: options.ttlMs ?? this.#ttlMs,
      stored: false,
      pins: 0,
      expiresAt: 0,
      visible: options.visible ?? false,
      cached: options.cached ?? false,
      refs: undefined,
      bucket: 0,
    })
    this.#unfinished += 1
    return true
  }

  has(id: string): boolean {
    return this.lookup(id) !== undefined
  }

  /** The entry of an object (an expired one is freed on the spot). */
  lookup(id: string): ObjectEntry | undefined {
    const entry = this.#entries.get(id)
    if (entry && entry.expiresAt !== 0 && entry.expiresAt <= this.#now() && this.#freeable(entry)) {
      this.#free(entry)
      return undefined
    }
    return entry
  }

  /** A client or another process saw the object now: it lives for its TTL from now (once it is finished). */
  seen(id: string): ObjectEntry | undefined {
    const entry = this.seenInside(id)
    if (entry) this.#see(entry)
    return entry
  }

  /**
   * The ids in the object's value were seen (its value left this process):
   * they live for their TTL from now. What those contain, they pin.
   */
  seenInside(id: string): ObjectEntry | undefined {
    const entry = this.lookup(id)
    if (!entry) return undefined
    if (entry.status === 'ready' && entry.refs) {
      for (const ref of entry.refs) {
        const inner = this.#entries.get(ref)
        if (inner) this.#see(inner)
      }
    }
    return entry
  }

  #see(entry: ObjectEntry): void {
    entry.visible = true
    if (isSettled(entry)) this.#extend(entry)
  }

  /**
   * The value of a ready object held here, read back from disk if it was
   * spilled: into memory again (`keep`), or, for a value on its way out of
   * this process, just for the caller (bytes then not in shared memory).
   */
  value(id: string, keep = true): EncodedValue | undefined {
    return this.#values.get(id, keep)
  }

  /**
   * Whether a byte value of `length` had better go to disk as it arrives than
   * through memory: when it is big beside the store (an eighth of it or more)
   * and memory has no room for it as things stand.
   */
  streamsToDisk(length: number): boolean {
    return this.#values.streamsToDisk(length)
  }

  /**
   * Stores `length` bytes arriving in `chunks` (a big request body) under a
   * new id, writing them to disk as they come; false if the id is taken.
   * Throws ObjectStoreFullError when they do not fit, storing nothing.
   */
  async putFrom(
    id: string,
    length: number,
    chunks: AsyncIterable<Uint8Array>,
    options: CreateOptions = {},
  ): Promise<boolean> {
    if (!this.create(id, null, options)) return false
    try {
      await this.#values.keepFrom(id, length, chunks)
    } catch (err) {
      const entry = this.#entries.get(id)
      if (entry) this.#free(entry)
      throw err
    }
    const entry = this.#entries.get(id)
    if (!entry) {
      this.#values.remove(id) // deleted while it arrived
      return true
    }
    entry.stored = true
    this.#finish(entry, { elsewhere: { size: length, contentType: BYTES_TYPE } })
    return true
  }

  /**
   * An open descriptor on the bytes of a ready object that is on disk and not
   * in memory, for streaming them out without reading them in; the caller closes it.
   */
  openOnDisk(id: string): SpilledFile | undefined {
    if (this.#entries.get(id)?.status !== 'ready') return undefined
    return this.#values.openOnDisk(id)
  }

  markRunning(id: string, attempts: number): void {
    const entry = this.#entries.get(id)
    if (!entry || isSettled(entry)) return
    entry.status = 'running'
    entry.attempts = attempts
  }

  /**
   * Stores a value under a new id (a put); false if the id is taken. Throws
   * ObjectStoreFullError, storing nothing, when memory and disk are full.
   */
  put(id: string, value: EncodedValue, options: CreateOptions = {}): boolean {
    if (!this.create(id, null, options)) return false
    const entry = this.#entries.get(id) as ObjectEntry
    try {
      this.#values.keep(id, value)
    } catch (err) {
      this.#entries.delete(id)
      this.#unfinished -= 1
      throw err
    }
    entry.stored = true
    this.#finish(entry, { value })
    return true
  }

  /**
   * Pins the objects a pending task takes as arguments (top-level and nested
   * `$ref`s) until it settles. Ids not stored here are skipped.
   */
  holdArguments(id: string, argIds: readonly string[]): void {
    const entry = this.#entries.get(id)
    if (!entry || isSettled(entry) || argIds.length === 0) return
    entry.refs = this.#pinAll(argIds, entry.refs)
  }

  /**
   * Finishes an object with its value or error; wakes whoever waits for it.
   * `elsewhere` records an object that is ready but stored on another node
   * (a head's directory keeps only small values itself). A value that fits
   * neither memory nor disk fails the object with OBJECT_STORE_FULL.
   */
  settle(id: string, outcome: SettledAs): void {
    const entry = this.#entries.get(id)
    if (!entry || isSettled(entry)) return // freed while it was computed, or settled already
    if ('value' in outcome) {
      try {
        this.#values.keep(id, outcome.value)
      } catch (err) {
        if (!(err instanceof ObjectStoreFullError)) throw err
        this.#finish(entry, { error: serializeError(err) })
        return
      }
      entry.stored = true
    }
    this.#finish(entry, outcome)
  }

  #finish(entry: ObjectEntry, outcome: SettledAs): void {
    this.#unfinished -= 1
    const argRefs = entry.refs
    entry.refs = undefined
    if ('value' in outcome) {
      entry.status = 'ready'
      entry.size = sizeOf(outcome.value)
      entry.contentType = contentTypeOf(outcome.value)
      // What the value refers to is pinned before the arguments are let go: one may be both.
      if (outcome.value.kind === 'json') entry.refs = this.#pinAll(heldIdsInJson(outcome.value.text))
    } else if ('elsewhere' in outcome) {
      entry.status = 'ready'
      entry.size = outcome.elsewhere.size
      entry.contentType = outcome.elsewhere.contentType
    } else {
      entry.status = outcome.cancelled ? 'cancelled' : 'failed'
      entry.error = outcome.error
    }
    if (argRefs) for (const ref of argRefs) this.unpin(ref)
    if (entry.visible) this.#extend(entry)
    this.#waiters.notify(entry.id, entry)
    if (this.#freeable(entry)) this.#free(entry)
  }

  /** Turns an object into a copy of one owned elsewhere, kept for `ttlMs` after it was last seen. */
  makeCopy(id: string, ttlMs: number): void {
    const entry = this.#entries.get(id)
    if (!entry) return
    entry.cached = true
    entry.ttlMs = ttlMs
    this.#see(entry)
  }

  /** One more holder needs the object; false if it is not here. */
  pin(id: string): boolean {
    const entry = this.#entries.get(id)
    if (!entry) return false
    entry.pins += 1
    return true
  }

  /** A holder no longer needs the object: freed if nothing else does. */
  unpin(id: string): void {
    const entry = this.#entries.get(id)
    if (!entry || entry.pins === 0) return
    entry.pins -= 1
    if (entry.pins === 0 && this.#freeable(entry)) this.#free(entry)
  }

  /** Frees an object now, whoever holds it; whoever waits for it learns it is gone. */
  delete(id: string): boolean {
    const entry = this.#entries.get(id)
    if (!entry) return false
    this.#free(entry)
    return true
  }

  /** Frees the visible objects whose TTL has run out and that nothing pins. */
  expire(): void {
    const now = this.#now()
    for (const id of this.#expiries.due(now)) {
      const entry = this.#entries.get(id)
      if (!entry) continue
      entry.bucket = 0
      // Read since: filed again. Pinned: freed when the last pin goes.
      if (entry.expiresAt > now) entry.bucket = this.#expiries.add(id, entry.expiresAt)
      else if (this.#freeable(entry)) this.#free(entry)
    }
  }

  /** Calls `listener` once the object settles (or at once if it has); undefined means it is gone. */
  onSettled(id: string, listener: Listener): () => void {
    return this.#waiters.on(id, listener)
  }

  /** Resolves with the settled entry, or with the entry as it stands after `timeoutMs` (Infinity: no limit). */
  whenSettled(id: string, timeoutMs: number): Promise<ObjectEntry | undefined> {
    return this.#waiters.whenSettled(id, timeoutMs)
  }

  /**
   * Waits until `numReturns` of `ids` are settled or `timeoutMs` passes; returns
   * the settled ids in input order, at most `numReturns` of them. Gone ids count as settled.
   */
  waitAny(ids: readonly string[], numReturns: number, timeoutMs: number): Promise<string[]> {
    return this.#waiters.waitAny(ids, numReturns, timeoutMs)
  }

  /** Whether anyone here waits for the object to settle. */
  waitedOn(id: string): boolean {
    return this.#waiters.has(id)
  }

  /** Ids of objects whose values are in memory here and at least `minBytes`, at most `limit` of them. */
  largest(minBytes: number, limit: number): string[] {
    return this.#values.largestInMemory(minBytes, limit)
  }

  /** Objects not finished yet: calls queued, waiting or running, and copies on their way. */
  get unfinished(): number {
    return this.#unfinished
  }

  /** Bytes of values in memory. */
  get memoryBytes(): number {
    return this.#values.memoryBytes
  }

  /** Counts for status pages and metrics. */
  /**
   * The biggest objects here, biggest first, with where their values are and
   * what holds them (`magpie memory`): calls waiting to run that take them,
   * values that contain them, and threads' live handles (`handles(id)`).
   */
  biggest(limit: number, handles: (id: string) => number): HeldObject[] {
    const top: ObjectEntry[] = []
    for (const entry of this.#entries.values()) {
      if (!isSettled(entry) || entry.size === 0) continue
      if (top.length === limit && (top[limit - 1] as ObjectEntry).size >= entry.size) continue
      let at = top.length
      while (at > 0 && (top[at - 1] as ObjectEntry).size < entry.size) at--
      top.splice(at, 0, entry)
      if (top.length > limit) top.pop()
    }
    const wanted = new Set(top.map((e) => e.id))
    const calls = new Map<string, number>()
    const values = new Map<string, number>()
    for (const entry of this.#entries.values()) {
      for (const ref of entry.refs ?? []) {
        if (!wanted.has(ref)) continue
        const into = isSettled(entry) ? values : calls
        into.set(ref, (into.get(ref) ?? 0) + 1)
      }
    }
    const now = this.#now()
    return top.map((e) => ({
      id: e.id,
      size: e.size,
      contentType: e.contentType,
      function: e.function,
      where: !e.stored ? 'elsewhere' : this.#values.inMemory(e.id) ? 'memory' : 'disk',
      heldBy: { calls: calls.get(e.id) ?? 0, values: values.get(e.id) ?? 0, handles: handles(e.id) },
      ttlS: e.expiresAt === 0 ? null : Math.max(0, Math.round((e.expiresAt - now) / 1000)),
    }))
  }

  stats(): StoreStats {
    const values = this.#values.counts()
    return {
      count: this.#entries.size,
      unfinished: this.#unfinished,
      bytes: values.memory.bytes,
      spilled: values.disk,
      spills: values.spills,
      restores: values.restores,
      freed: this.#freed,
    }
  }

  /** Stops the sweeper and deletes the spill files. */
  close(): void {
    clearInterval(this.#sweeper)
    this.#values.close()
  }

  #freeable(entry: ObjectEntry): boolean {
    return (
      isSettled(entry) && entry.pins === 0 && entry.expiresAt <= this.#now() && !this.#waiters.has(entry.id)
    )
  }

  #extend(entry: ObjectEntry): void {
    const until = this.#now() + entry.ttlMs
    if (until <= entry.expiresAt) return
    entry.expiresAt = until
    // An entry already filed is filed anew when its bucket comes due.
    if (entry.bucket === 0) entry.bucket = this.#expiries.add(entry.id, until)
  }

  #pinAll(ids: readonly string[], into: string[] = []): string[] | undefined {
    for (const id of ids) if (this.pin(id)) into.push(id)
    return into.length > 0 ? into : undefined
  }

  #free(entry: ObjectEntry): void {
    const { id } = entry
    if (this.#entries.get(id) !== entry) return
    this.#entries.delete(id)
    if (entry.bucket !== 0) this.#expiries.remove(id, entry.bucket)
    if (!isSettled(entry)) this.#unfinished -= 1
    this.#values.remove(id)
    this.#freed += 1
    const refs = entry.refs
    entry.refs = undefined
    this.#waiters.notify(id, undefined)
    this.#onFreed?.(id)
    if (refs) for (const ref of refs) this.unpin(ref)
  }
}

/** The most objects `GET /v1/objects?sort=size` lists. */
export const MAX_OBJECTS_LISTED = 1000

/** `limit` of a listing of objects: 20 by default, 1 to MAX_OBJECTS_LISTED. */
export function objectsLimit(raw: string | undefined): number {
  if (raw === undefined) return 20
  const value = Number(raw)
  if (!/^\d+$/.test(raw) || value < 1 || value > MAX_OBJECTS_LISTED) {
    throw new BadRequestError(`limit must be an integer from 1 to ${MAX_OBJECTS_LISTED}`)
  }
  return value
}
