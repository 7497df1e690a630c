/**
 * Copies of objects held elsewhere in a cluster: a node fetches an argument
 * or a `get` it does not hold, once, from the node that has it (or as told
 * where), and keeps the copy a while for more tasks that take it. A copy is
 * dropped rather than spilled when memory is short: its owner keeps the object.
 */
import type { EncodedValue } from '../sdk/codec.ts'
import { serializeError } from '../sdk/errors.ts'
import type { NodeCounters } from './node-counters.ts'
import type { ObjectStore } from './store/object-store.ts'

/** How long a copy of another node's object stays here after the last task that took it. */
const COPY_TTL_MS = 10_000

export interface RemoteObjectsOptions {
  store: ObjectStore
  counters: NodeCounters
  /** Fetches an object this node does not hold from the node at `at`. */
  fetchRemote?: ((id: string, at: string) => Promise<EncodedValue>) | undefined
  /** Where to fetch an object from that is not here and comes with no address. */
  locate?: ((id: string) => string | undefined) | undefined
}

export class RemoteObjects {
  readonly #store: ObjectStore
  readonly #counters: NodeCounters
  readonly #fetchRemote: RemoteObjectsOptions['fetchRemote']
  readonly #locate: RemoteObjectsOptions['locate']

  constructor(options: RemoteObjectsOptions) {
    this.#store = options.store
    this.#counters = options.counters
    this.#fetchRemote = options.fetchRemote
    this.#locate = options.locate
  }

  /** Starts fetching `id` if it is not here: from `at` if given, else from where it is found. */
  fetchIfMissing(id: string, at?: string): void {
    if (this.#store.has(id)) return
    const from = at ?? this.#locate?.(id)
    if (from) this.#fetchCopy(id, from)
  }

  /** Starts fetching copies of the objects a function asks for that are held elsewhere. */
  fetchMissing(ids: readonly string[]): void {
    if (!this.#locate) return
    for (const id of ids) this.fetchIfMissing(id)
  }

  /**
   * A result kept here for the owner of a stolen call, which has it now:
   * it becomes a copy like those fetched from peers.
   */
  keepAsCopy(id: string): void {
    this.#store.makeCopy(id, COPY_TTL_MS)
    this.#store.unpin(id)
  }

  /** Fetches a copy; its entry is pending meanwhile, so tasks wait for it. */
  #fetchCopy(id: string, at: string): void {
    const fetchRemote = this.#fetchRemote
    if (!fetchRemote || !this.#store.create(id, null, { cached: true, visible: true, ttlMs: COPY_TTL_MS }))
      return
    fetchRemote(id, at).then(
      (value) => {
        this.#counters.copiedHere(value)
        this.#store.settle(id, { value })
      },
      (err: unknown) => this.#store.settle(id, { error: serializeError(err, 'OBJECT_LOST') }),
    )
  }
}
