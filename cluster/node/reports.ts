/**
 * A node's reports to the owners of the calls it runs for others: the head
 * (calls it placed here) or a peer (calls stolen from it). Each result goes
 * to its owner through that owner's outbox, batched, in order, sent again
 * while the owner does not answer. A result that still cannot go (refused,
 * or its owner away for 30 s) is said on stderr and reported `lost` instead,
 * so that the owner runs the call again as it would one of a dead node; a
 * `lost` report that cannot go either is given up with a warning (a head
 * that silent has taken this node for dead and placed its calls again; a
 * peer that silent is dead, with what it owned).
 */
import type { LocalNode } from '../../node/node.ts'
import type { ObjectEntry } from '../../node/store/object-store.ts'
import { JSON_TYPE } from '../../sdk/codec.ts'
import { type InternalClient, isTransient } from '../client.ts'
import { warn } from '../log.ts'
import { Outbox, Outboxes } from '../outbox.ts'
import { INLINE_MAX, type Settled } from '../protocol.ts'

export interface ReportsOptions {
  node: LocalNode
  client: InternalClient
  /** This node's id and address, as its reports name it. */
  self(): { id: string; address: string }
}

/**
 * Reports to one owner go at most this often, in ms: a node finishing the
 * calls it stole one after another sends their owner a request per window,
 * not per call (each costs both nodes more than a short call). The last of
 * an owner's calls here goes at once: nothing is held back for the window
 * when nothing else is coming.
 */
export const REPORT_GATHER_MS = 50

export class Reports {
  readonly #node: LocalNode
  /** Calls run here for someone else, by id: the URL of their owner, and how to stop listening for their result. */
  readonly #owners = new Map<string, { owner: string; epoch: number; off: () => void }>()
  /** Results of stolen calls kept here for their owner, until it has them. */
  readonly #pinnedForOwner = new Set<string>()
  /** Calls running here for each owner whose results are yet to come. */
  readonly #pendingFor = new Map<string, number>()
  readonly #outboxes: Outboxes<Settled>

  constructor(options: ReportsOptions) {
    const { node, client, self } = options
    this.#node = node
    this.#outboxes = new Outboxes(
      (owner) =>
        new Outbox<Settled>({
          send: (objects) => {
            const me = self()
            return client.report(owner, { node: me.id, address: me.address, objects })
          },
          onGiveUp: (objects, cause) => this.#undeliverable(owner, objects, cause),
          // Results that settle one after another go together: a request each would cost both nodes more than the calls.
          gatherMs: REPORT_GATHER_MS,
        }),
    )
  }

  /** The call `id` (its owner's placement `epoch` of it) runs here for `owner`: its result is reported there. */
  runFor(id: string, owner: string, epoch: number): void {
    this.forget(id)
    const run = { owner, epoch, off: () => {} }
    this.#owners.set(id, run)
    this.#pendingFor.set(owner, (this.#pendingFor.get(owner) ?? 0) + 1)
    run.off = this.#node.store.onSettled(id, (entry) => this.#report(id, entry))
  }

  /** Its result is kept here, pinned, until its owner has it. */
  pinForOwner(id: string): void {
    this.#pinnedForOwner.add(id)
  }

  ownerOf(id: string): string | undefined {
    return this.#owners.get(id)?.owner
  }

  epochOf(id: string): number {
    return this.#owners.get(id)?.epoch ?? 0
  }

  /**
   * The call leaves this node (stolen, or handed back): its result is no
   * longer this node's to report, and this node no longer waits for it.
   */
  forget(id: string): void {
    this.#owners.get(id)?.off()
    this.#forget(id)
  }

  #forget(id: string): void {
    const run = this.#owners.get(id)
    if (!run) return
    this.#owners.delete(id)
    const left = (this.#pendingFor.get(run.owner) ?? 1) - 1
    if (left > 0) this.#pendingFor.set(run.owner, left)
    else this.#pendingFor.delete(run.owner)
  }

  /** The owner of a stolen call has copied its big result: the copy here is a copy like any other. */
  released(id: string): void {
    if (this.#pinnedForOwner.delete(id)) this.#node.keepAsCopy(id)
  }

  /** Resolves once every report is sent or given up. */
  drained(): Promise<void> {
    return this.#outboxes.drained()
  }

  #report(id: string, entry: ObjectEntry | undefined): void {
    const run = this.#owners.get(id)
    this.#forget(id)
    if (!run || !entry) return
    const to = run.owner
    const settled = this.#settledOf(id, entry, run.epoch)
    this.#outboxes.push(to, settled)
    if (!this.#pendingFor.has(to)) this.#outboxes.flushSoon(to)
    // The ids in a value sent away keep their TTL here.
    if (settled.value !== undefined) this.#node.store.seenInside(id)
    // Once the report carries all of it, this node's copy is not needed.
    // (A big value stays pinned until the owner has copied it: see released.)
    if (this.#pinnedForOwner.has(id) && (settled.value !== undefined || settled.status !== 'ready')) {
      this.#pinnedForOwner.delete(id)
      this.#node.store.unpin(id)
    }
  }

  #settledOf(id: string, entry: ObjectEntry, epoch: number): Settled {
    const status = entry.status === 'ready' || entry.status === 'cancelled' ? entry.status : 'failed'
    const settled: Settled = {
      id,
      status,
      size: entry.size,
      contentType: entry.contentType,
      attempts: entry.attempts,
      epoch,
    }
    if (entry.error) settled.error = entry.error
    if (entry.status === 'ready' && entry.contentType === JSON_TYPE && entry.size <= INLINE_MAX) {
      // On its way out: read from disk if spilled, not brought back into memory.
      const value = this.#node.store.value(id, false)
      if (value?.kind === 'json') settled.value = value.text
    }
    return settled
  }

  #undeliverable(owner: string, objects: Settled[], cause: unknown): void {
    warn(isTransient(cause) ? 'results could not reach their owner' : 'an owner refused results', {
      owner,
      results: objects.length,
      cause,
    })
    // Told once more, without the values that may have been the trouble: the
    // owner runs those calls again, as it would those of a node that died.
    for (const o of objects) {
      if (o.status !== 'lost')
        this.#outboxes.push(owner, {
          id: o.id,
          status: 'lost',
          size: 0,
          contentType: null,
          attempts: o.attempts,
          epoch: o.epoch,
        })
    }
  }
}
