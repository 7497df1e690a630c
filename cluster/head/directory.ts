/**
 * The head's directory: a record of every object the head owns (the calls
 * and puts of clients) or has been asked about (objects made on nodes), with
 * its status, the node that holds its value or runs its call, and its small
 * JSON value when it came inline. Values stay on the nodes otherwise: the
 * directory keeps what answers a client without asking a node.
 *
 * A record lives for its TTL after a client last saw it, once settled; an
 * unfinished one lives until it settles. Inline values sit in memory up to a
 * bound and spill to disk beyond it, as a node's do.
 */
import type { ObjectInfo } from '../../node/backend.ts'
import { Expiries } from '../../node/store/expiries.ts'
import { SpillStore } from '../../node/store/spill.ts'
import { ValueTiers } from '../../node/store/value-tiers.ts'
import { isSettled, type ObjectStatus, Waiters } from '../../node/store/waiters.ts'
import { contentTypeOf, type EncodedValue, sizeOf } from '../../sdk/codec.ts'
import type { SerializedError } from '../../sdk/errors.ts'

/** Memory for the inline values the head keeps (beyond it they spill). */
const INLINE_VALUE_BYTES = 256 * 1024 * 1024
const SWEEP_MS = 1000

export interface DirectoryRecord extends ObjectInfo {
  status: ObjectStatus
  error?: SerializedError | undefined
  size: number
  contentType: string | null
  attempts: number
  /** Where the value is held, or the call runs. */
  node?: string | undefined
  /** Whether the value is kept here (a small JSON value that came inline). */
  inline: boolean
  ttlMs: number
  /** The head's own object (a client's call or put), kept in its state; else one it was asked about. */
  owned: boolean
  /** 0 while unfinished; then the time its TTL runs out. */
  expiresAt: number
  /** The second whose expiry check holds it (0: none). */
  bucket: number
}

/** How an object settles, as the head learns it. */
export type Outcome =
  | { value: EncodedValue; node?: string | undefined }
  | { held: { node: string; size: number; contentType: string } }
  | { error: SerializedError; cancelled?: boolean | undefined }

/** Told of every change to an owned object, to keep it in the head's state. */
export interface DirectoryJournal {
  settled(record: DirectoryRecord, value: EncodedValue | undefined): void
  reopened(id: string): void
  forgotten(id: string): void
}

export interface DirectoryOptions {
  /** Default lifetime after a client last saw an object, in ms. */
  ttlMs: number
  /** Folder for inline values that do not fit in memory. */
  spillDir: string
  now?: () => number
  /** Told of every object forgotten (freed, or past its TTL). */
  forgotten?: (id: string) => void
}

export class Directory {
  readonly #records = new Map<string, DirectoryRecord>()
  readonly #values: ValueTiers
  readonly #waiters = new Waiters<DirectoryRecord>((id) => this.lookup(id))
  readonly #expiries = new Expiries()
  readonly #ttlMs: number
  readonly #now: () => number
  readonly #sweeper: ReturnType<typeof setInterval>
  readonly #forgotten: (id: string) => void
  #journal: DirectoryJournal | undefined

  constructor(options: DirectoryOptions) {
    this.#forgotten = options.forgotten ?? (() => {})
    if (!(options.ttlMs > 0)) throw new TypeError('options.ttlMs must be a positive number')
    this.#ttlMs = options.ttlMs
    this.#now = options.now ?? Date.now
    this.#values = new ValueTiers({
      maxBytes: INLINE_VALUE_BYTES,
      spill: new SpillStore({ dir: options.spillDir, limitBytes: Number.POSITIVE_INFINITY }),
    })
    this.#sweeper = setInterval(() => this.expire(), SWEEP_MS)
    this.#sweeper.unref()
  }

  /** Records an object to come; false if the id is taken. */
  create(
    id: string,
    fn: string | null,
    options: { ttlMs?: number | undefined; node?: string; owned?: boolean; createdAt?: number } = {},
  ): boolean {
    if (this.lookup(id)) return false
    this.#records.set(id, {
      id,
      status: 'pending',
      size: 0,
      contentType: null,
      function: fn,
      attempts: 0,
      createdAt: options.createdAt ?? this.#now(),
      node: options.node,
      inline: false,
      owned: options.owned ?? false,
      ttlMs: options.ttlMs ?? this.#ttlMs,
      expiresAt: 0,
      bucket: 0,
    })
    return true
  }

  /** An object's record; one whose TTL ran out is forgotten on the spot. */
  lookup(id: string): DirectoryRecord | undefined {
    const record = this.#records.get(id)
    if (record && record.expiresAt !== 0 && record.expiresAt <= this.#now()) {
      this.#forget(record)
      return undefined
    }
    return record
  }

  /** A client saw the object now: it lives for its TTL from now (once settled). */
  seen(id: string): DirectoryRecord | undefined {
    const record = this.lookup(id)
    if (record && isSettled(record)) this.#extend(record)
    return record
  }

  /** The node that runs an unfinished call (or will hold its value), as placement or a steal moves it. */
  locate(id: string, node: string, attempts?: number): void {
    const record = this.#records.get(id)
    // Settled: where it is was settled with it (a late report of another run changes nothing).
    if (!record || isSettled(record)) return
    record.node = node
    if (attempts !== undefined) record.attempts = attempts
  }

  /** Settles an object (once: later outcomes are ignored) and wakes whoever waits. */
  settle(id: string, outcome: Outcome): void {
    const record = this.#records.get(id)
    if (!record || isSettled(record)) return
    if ('value' in outcome) {
      this.#values.keep(id, outcome.value)
      record.inline = true
      record.status = 'ready'
      record.size = sizeOf(outcome.value)
      record.contentType = contentTypeOf(outcome.value)
      if (outcome.node !== undefined) record.node = outcome.node
    } else if ('held' in outcome) {
      record.status = 'ready'
      record.node = outcome.held.node
      record.size = outcome.held.size
      record.contentType = outcome.held.contentType
    } else {
      record.status = outcome.cancelled ? 'cancelled' : 'failed'
      record.error = outcome.error
    }
    this.#extend(record)
    if (record.owned) this.#journal?.settled(record, 'value' in outcome ? outcome.value : undefined)
    this.#waiters.notify(id, record)
  }

  /** From now on, changes to owned objects are told to `journal` (undefined: to none). */
  keepIn(journal: DirectoryJournal | undefined): void {
    this.#journal = journal
  }

  /**
   * A ready object whose value was lost with its node is to be made again:
   * unfinished once more, so that reads wait for it.
   */
  reopen(id: string): void {
    const record = this.#records.get(id)
    if (record?.status !== 'ready') return
    if (record.inline) this.#values.remove(id)
    if (record.bucket !== 0) this.#expiries.remove(id, record.bucket)
    Object.assign(record, {
      status: 'pending',
      size: 0,
      contentType: null,
      inline: false,
      expiresAt: 0,
      bucket: 0,
    })
    if (record.owned) this.#journal?.reopened(id)
  }

  /** A ready object whose value was lost and cannot be made again: failed, with why. */
  lose(id: string, error: SerializedError): void {
    const record = this.#records.get(id)
    if (record?.status !== 'ready') return
    record.status = 'failed'
    record.error = error
    if (record.owned) this.#journal?.settled(record, undefined)
  }

  /** Ready objects whose value is held by `node` alone (not inline here). */
  heldOn(node: string): DirectoryRecord[] {
    const held: DirectoryRecord[] = []
    for (const record of this.#records.values()) {
      if (record.node === node && record.status === 'ready' && !record.inline) held.push(record)
    }
    return held
  }

  /** The inline value of a ready object, if the head keeps it. */
  value(id: string): EncodedValue | undefined {
    return this.#records.get(id)?.inline ? this.#values.get(id, false) : undefined
  }

  /** Forgets an object; false if it was unknown. Whoever waits learns it is gone. */
  delete(id: string): boolean {
    const record = this.#records.get(id)
    if (!record) return false
    this.#forget(record)
    return true
  }

  onSettled(id: string, listener: (record: DirectoryRecord | undefined) => void): () => void {
    return this.#waiters.on(id, listener)
  }

  whenSettled(id: string, timeoutMs: number): Promise<DirectoryRecord | undefined> {
    return this.#waiters.whenSettled(id, timeoutMs)
  }

  waitAny(ids: readonly string[], count: number, timeoutMs: number): Promise<string[]> {
    return this.#waiters.waitAny(ids, count, timeoutMs)
  }

  /** Forgets the objects whose TTL ran out and that nobody waits for. */
  expire(): void {
    const now = this.#now()
    for (const id of this.#expiries.due(now)) {
      const record = this.#records.get(id)
      if (!record) continue
      record.bucket = 0
      if (record.expiresAt > now || this.#waiters.has(id))
        record.bucket = this.#expiries.add(id, Math.max(record.expiresAt, now + 1))
      else this.#forget(record)
    }
  }

  close(): void {
    clearInterval(this.#sweeper)
    this.#values.close()
  }

  #extend(record: DirectoryRecord): void {
    const until = this.#now() + record.ttlMs
    if (until <= record.expiresAt) return
    record.expiresAt = until
    if (record.bucket === 0) record.bucket = this.#expiries.add(record.id, until)
  }

  #forget(record: DirectoryRecord): void {
    if (this.#records.get(record.id) !== record) return
    this.#records.delete(record.id)
    if (record.bucket !== 0) this.#expiries.remove(record.id, record.bucket)
    if (record.inline) this.#values.remove(record.id)
    this.#waiters.notify(record.id, undefined)
    if (record.owned) this.#journal?.forgotten(record.id)
    this.#forgotten(record.id)
  }
}
