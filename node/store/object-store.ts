/**
 * A node's object store: the status of every object this node knows of, and
 * the encoded values of finished ones. Objects still being computed sit in a
 * plain map (never evicted); finished ones live in an lru-cache bounded by
 * bytes, kept for their TTL after they were last read.
 */
import { LRUCache } from 'lru-cache'
import { contentTypeOf, type EncodedValue, sizeOf } from '../../sdk/codec.ts'
import type { SerializedError } from '../../sdk/errors.ts'

export type ObjectStatus = 'pending' | 'running' | 'ready' | 'failed' | 'cancelled'

export interface ObjectEntry {
  readonly id: string
  status: ObjectStatus
  value?: EncodedValue
  error?: SerializedError
  size: number
  contentType: string | null
  function: string | null
  attempts: number
  readonly createdAt: number
  ttlMs: number
  /** The node that holds the value, where another process does. */
  node?: string
}

export interface ObjectStoreOptions {
  /** Bytes of finished objects kept in memory. */
  maxBytes: number
  /** Default lifetime of a finished object after it was last read, in ms. */
  ttlMs: number
  /** Clock in ms for creation times and TTLs (tests pass a fake one). */
  now?: () => number
}

/** Bookkeeping bytes counted per object on top of its value. */
const ENTRY_OVERHEAD = 128

type Listener = (entry: ObjectEntry | undefined) => void

/** A timer, or none for an infinite wait. */
function startTimer(callback: () => void, ms: number): ReturnType<typeof setTimeout> | undefined {
  return Number.isFinite(ms) ? setTimeout(callback, Math.min(ms, 2 ** 31 - 1)) : undefined
}

export function isSettled(entry: ObjectEntry): boolean {
  return entry.status === 'ready' || entry.status === 'failed' || entry.status === 'cancelled'
}

export class ObjectStore {
  readonly #unfinished = new Map<string, ObjectEntry>()
  readonly #finished: LRUCache<string, ObjectEntry>
  readonly #listeners = new Map<string, Listener[]>()
  readonly #now: () => number
  readonly #ttlMs: number

  constructor(options: ObjectStoreOptions) {
    if (!(options.maxBytes > 0)) throw new TypeError('options.maxBytes must be a positive number')
    if (!(options.ttlMs > 0)) throw new TypeError('options.ttlMs must be a positive number')
    this.#now = options.now ?? Date.now
    this.#ttlMs = options.ttlMs
    this.#finished = new LRUCache<string, ObjectEntry>({
      maxSize: options.maxBytes,
      sizeCalculation: (entry) => entry.size + ENTRY_OVERHEAD,
      ttl: options.ttlMs,
      updateAgeOnGet: true,
      updateAgeOnHas: false,
      perf: { now: this.#now },
      // A given clock is read on every check: lru-cache's 1 ms time cache would hide fake time.
      ...(options.now ? { ttlResolution: 0 } : {}),
    })
  }

  /** Registers an object to be computed; false if the id is taken. */
  create(id: string, fn: string | null, ttlMs = this.#ttlMs): boolean {
    if (this.has(id)) return false
    this.#unfinished.set(id, {
      id,
      status: 'pending',
      size: 0,
      contentType: null,
      function: fn,
      attempts: 0,
      createdAt: this.#now(),
      ttlMs,
    })
    return true
  }

  has(id: string): boolean {
    return this.#unfinished.has(id) || this.#finished.has(id)
  }

  /** The entry of an object, refreshing its TTL if it is finished. */
  lookup(id: string): ObjectEntry | undefined {
    return this.#unfinished.get(id) ?? this.#finished.get(id)
  }

  markRunning(id: string, attempts: number): void {
    const entry = this.#unfinished.get(id)
    if (!entry) return
    entry.status = 'running'
    entry.attempts = attempts
  }

  /** Stores a value under a new id (a put); false if the id is taken. */
  put(id: string, value: EncodedValue, ttlMs = this.#ttlMs): boolean {
    if (!this.create(id, null, ttlMs)) return false
    this.settle(id, { value })
    return true
  }

  /**
   * Finishes an object with its value or error; wakes whoever waits for it.
   * `elsewhere` records an object that is ready but stored on another node
   * (a head's directory keeps only small values itself).
   */
  settle(
    id: string,
    outcome:
      | { value: EncodedValue }
      | { elsewhere: { size: number; contentType: string } }
      | { error: SerializedError; cancelled?: boolean },
  ): void {
    const entry = this.#unfinished.get(id)
    if (!entry) return // freed while it was computed
    this.#unfinished.delete(id)
    if ('value' in outcome) {
      entry.status = 'ready'
      entry.value = outcome.value
      entry.size = sizeOf(outcome.value)
      entry.contentType = contentTypeOf(outcome.value)
    } else if ('elsewhere' in outcome) {
      entry.status = 'ready'
      entry.size = outcome.elsewhere.size
      entry.contentType = outcome.elsewhere.contentType
    } else {
      entry.status = outcome.cancelled ? 'cancelled' : 'failed'
      entry.error = outcome.error
    }
    this.#finished.set(id, entry, { ttl: entry.ttlMs })
    this.#notify(id, entry)
  }

  /** Frees an object now; whoever waits for it learns it is gone. */
  delete(id: string): boolean {
    const existed = this.#unfinished.delete(id) || this.#finished.delete(id)
    if (existed) this.#notify(id, undefined)
    return existed
  }

  /** Calls `listener` once the object settles (or at once if it has); undefined means it is gone. */
  onSettled(id: string, listener: Listener): () => void {
    const entry = this.lookup(id)
    if (!entry || isSettled(entry)) {
      listener(entry)
      return () => {}
    }
    let list = this.#listeners.get(id)
    if (!list) {
      list = []
      this.#listeners.set(id, list)
    }
    list.push(listener)
    return () => {
      const current = this.#listeners.get(id)
      if (!current) return
      const at = current.indexOf(listener)
      if (at >= 0) current.splice(at, 1)
      if (current.length === 0) this.#listeners.delete(id)
    }
  }

  /** Resolves with the settled entry, or with the entry as it stands after `timeoutMs` (Infinity: no limit). */
  whenSettled(id: string, timeoutMs: number): Promise<ObjectEntry | undefined> {
    const entry = this.lookup(id)
    if (!entry || isSettled(entry) || timeoutMs <= 0) return Promise.resolve(entry)
    return new Promise((resolve) => {
      const timer = startTimer(() => {
        off()
        resolve(this.lookup(id))
      }, timeoutMs)
      const off = this.onSettled(id, (settled) => {
        if (timer) clearTimeout(timer)
        resolve(settled)
      })
    })
  }

  /**
   * Waits until `numReturns` of `ids` are settled or `timeoutMs` passes; returns
   * the settled ids in input order, at most `numReturns` of them. Gone ids count as settled.
   */
  waitAny(ids: readonly string[], numReturns: number, timeoutMs: number): Promise<string[]> {
    const settledNow = () => ids.filter((id) => this.#isDone(id))
    const first = settledNow()
    if (first.length >= numReturns || timeoutMs <= 0) return Promise.resolve(first.slice(0, numReturns))
    return new Promise((resolve) => {
      let count = first.length
      const offs: Array<() => void> = []
      const finish = () => {
        if (timer) clearTimeout(timer)
        for (const off of offs) off()
        resolve(settledNow().slice(0, numReturns))
      }
      const timer = startTimer(finish, timeoutMs)
      const done = new Set(first)
      for (const id of ids) {
        if (done.has(id)) continue
        offs.push(
          this.onSettled(id, () => {
            count += 1
            if (count === numReturns) queueMicrotask(finish)
          }),
        )
      }
    })
  }

  #isDone(id: string): boolean {
    if (this.#unfinished.has(id)) return false
    const entry = this.#finished.peek(id)
    return entry === undefined || isSettled(entry)
  }

  #notify(id: string, entry: ObjectEntry | undefined): void {
    const list = this.#listeners.get(id)
    if (!list) return
    this.#listeners.delete(id)
    for (const listener of list) listener(entry)
  }

  /** Whether anyone here waits for the object to settle. */
  waitedOn(id: string): boolean {
    return (this.#listeners.get(id)?.length ?? 0) > 0
  }

  /** Ids of finished objects held here whose values are at least `minBytes`, at most `limit` of them. */
  largest(minBytes: number, limit: number): string[] {
    const ids: string[] = []
    for (const [id, entry] of this.#finished.entries()) {
      if (ids.length >= limit) break
      if (entry.value && entry.size >= minBytes) ids.push(id)
    }
    return ids
  }

  /** Counts for status pages and metrics. */
  stats(): { count: number; bytes: number; unfinished: number } {
    return {
      count: this.#finished.size + this.#unfinished.size,
      bytes: this.#finished.calculatedSize,
      unfinished: this.#unfinished.size,
    }
  }
}
