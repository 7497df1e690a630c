/**
 * The head's calls in flight: each placed on a node and sent there through
 * that node's outbox (in order, in batches, sent again while the node does
 * not answer), and placed again by the rules of node death: when its node
 * dies, when a leaving node hands it back, or when its result was lost on
 * the way. A call runs at most `maxRetries` times more; then it fails.
 */
import { argumentBytes } from '../../node/admission.ts'
import { DEFAULT_MAX_RETRIES, type TaskSpec } from '../../node/task.ts'
import type { TaskArg } from '../../node/worker/messages.ts'
import { serializeError } from '../../sdk/errors.ts'
import { type InternalClient, isTransient, type OutgoingCall } from '../client.ts'
import { warn } from '../log.ts'
import { Outbox, Outboxes } from '../outbox.ts'
import { toWireArg, type WireArg } from '../protocol.ts'
import type { Directory } from './directory.ts'
import { capable, place } from './placement.ts'
import type { ClusterNode, NodeRegistry } from './registry.ts'

/** How long a node may fail to take calls before it is taken for dead (its calls are then placed again). */
const SEND_GIVE_UP_MS = 5000

interface Placed {
  spec: TaskSpec
  attempts: number
  maxRetries: number
  node: string
  /** Bytes of its arguments, counted while it is in flight. */
  bytes: number
}

function jobOf(spec: TaskSpec, attempts: number): Placed {
  return {
    spec,
    attempts,
    // An actor's call runs again only as maxTaskRetries allows (its constructor, as the actor is made again).
    maxRetries: spec.actor
      ? spec.actor.method === null
        ? 0
        : (spec.options.maxTaskRetries ?? 0)
      : (spec.options.maxRetries ?? DEFAULT_MAX_RETRIES),
    node: '',
    bytes: argumentBytes(spec.args),
  }
}

export interface DispatcherOptions {
  registry: NodeRegistry
  directory: Directory
  client: InternalClient
  /** The node an actor lives on (its calls go there, and nowhere else); undefined if it is dead. */
  actorNode?: (actorId: string) => string | undefined
}

export class Dispatcher {
  readonly #registry: NodeRegistry
  readonly #directory: Directory
  readonly #placed = new Map<string, Placed>()
  #placedBytes = 0
  /** Finished calls whose results are held on nodes: their lineage, to make them again if that node dies. */
  readonly #lineage = new Map<string, Placed>()
  readonly #outboxes: Outboxes<OutgoingCall>
  readonly #actorNode: (actorId: string) => string | undefined

  constructor(options: DispatcherOptions) {
    this.#registry = options.registry
    this.#directory = options.directory
    this.#actorNode = options.actorNode ?? (() => undefined)
    const { client, registry } = options
    this.#outboxes = new Outboxes(
      (nodeId) =>
        new Outbox<OutgoingCall>({
          giveUpMs: SEND_GIVE_UP_MS,
          send: async (calls) => {
            const node = registry.get(nodeId)
            if (!node || node.state === 'dead') return // placed again by nodeDied
            // Cancelled or freed while they waited here, or placed elsewhere since: not sent.
            const live = calls.filter((call) => this.#placed.get(call.id)?.node === nodeId)
            if (live.length > 0) await client.sendCalls(node.address, live)
          },
          onGiveUp: (calls, cause) => this.#undeliverable(nodeId, calls, cause),
        }),
    )
  }

  /** Calls in flight, and the bytes of their arguments. */
  inFlight(): { calls: number; bytes: number } {
    return { calls: this.#placed.size, bytes: this.#placedBytes }
  }

  #place(job: Placed): void {
    if (this.#placed.has(job.spec.id)) return
    this.#placed.set(job.spec.id, job)
    this.#placedBytes += job.bytes
  }

  #unplace(id: string): Placed | undefined {
    const job = this.#placed.get(id)
    if (!job) return undefined
    this.#placed.delete(id)
    this.#placedBytes -= job.bytes
    return job
  }

  /** Whether some live node could ever run a call with these options. */
  canPlace(options: TaskSpec['options']): boolean {
    return capable(this.#registry.alive(), options).length > 0
  }

  /** Places a new call (its options complete) and sends it; false if no live node can run it. */
  submit(spec: TaskSpec): boolean {
    const job = jobOf(spec, 1)
    this.#place(job)
    return this.#dispatch(job)
  }

  /**
   * A call that was in flight when the head last stopped: in flight again,
   * on no node, until it is found on one (adopt) or run again (rerun).
   */
  restored(spec: TaskSpec, attempts: number): void {
    this.#place(jobOf(spec, attempts))
  }

  /** A restored call found unfinished on `node`: in flight there, placed again if that node dies. */
  adopt(id: string, node: string): void {
    const job = this.#placed.get(id)
    if (job?.node !== '') return
    job.node = node
    this.#directory.locate(id, node)
  }

  /**
   * A restored call that no node has: run again if its retries allow, else
   * failed; false (and left waiting) while no live node could run it.
   */
  rerun(id: string, why: string): boolean {
    const job = this.#placed.get(id)
    if (job?.node !== '') return true
    if (!this.canPlace(job.spec.options)) return false
    this.#retry(job, why)
    return true
  }

  /** The call that made a restored result held on a node, to make it again should that node die. */
  restoredLineage(spec: TaskSpec, attempts: number): void {
    this.#lineage.set(spec.id, jobOf(spec, attempts))
  }

  /**
   * The call settled: it is no longer in flight. Its attempts so far. A
   * result held on a node (`held`) keeps its call, to be made again should
   * that node die.
   */
  finished(id: string, held = false): number | undefined {
    const job = this.#unplace(id)
    if (job && held) this.#lineage.set(id, job)
    return job?.attempts
  }

  /** Forgets a call whose object was freed or that was cancelled; the node it was placed on, if it was in flight. */
  forget(id: string): string | undefined {
    const job = this.#unplace(id)
    this.#lineage.delete(id)
    return job?.node
  }

  /**
   * Runs again the call that made a result lost with its node; false if it
   * cannot (a put, or a call whose retries are spent). Its own arguments, if
   * lost too, are made again the same way, and it waits for them.
   */
  rebuild(id: string): boolean {
    const job = this.#lineage.get(id)
    if (!job || job.attempts > job.maxRetries) return false
    this.#lineage.delete(id)
    job.attempts += 1
    this.#place(job)
    this.#directory.reopen(id)
    if (!this.#dispatch(job)) this.#fail(job, 'NO_CAPACITY', 'no live node is left to run it')
    return true
  }

  /** The call that made a result, if it could be made again. */
  lineageOf(id: string): { fn: string; attempts: number; maxRetries: number } | undefined {
    const job = this.#lineage.get(id)
    return job && { fn: job.spec.fn, attempts: job.attempts, maxRetries: job.maxRetries }
  }

  /** Calls a leaving node hands back, placed elsewhere as they are. */
  handBack(ids: readonly string[]): void {
    for (const id of ids) {
      const job = this.#placed.get(id)
      if (job && !this.#dispatch(job)) this.#fail(job, 'NO_CAPACITY', 'no live node is left to run it')
    }
  }

  /** Places again, or fails, every call that was on a node that died. */
  nodeDied(node: ClusterNode): void {
    this.#outboxes.discard(node.id)
    for (const job of this.#placed.values()) {
      if (job.node === node.id) this.#retry(job, `node ${node.id} died while running it`)
    }
  }

  /**
   * A call was stolen from the node it was placed on: it runs on `thief`
   * now, whose death places it again (at once, if the thief is dead already).
   */
  moved(id: string, epoch: number, thief: string): void {
    const job = this.#placed.get(id)
    if (!job || job.attempts !== epoch) return
    job.node = thief
    this.#directory.locate(id, thief)
    const state = this.#registry.get(thief)?.state
    if (state === undefined || state === 'dead') this.#retry(job, `node ${thief} died while running it`)
  }

  /**
   * A call's result was lost on its way here: it runs again, as if its node
   * had died; unless it was placed again since (`epoch` is an older placement).
   */
  lost(id: string, epoch: number, why: string): void {
    const job = this.#placed.get(id)
    if (job && job.attempts === epoch) this.#retry(job, why)
  }

  #retry(job: Placed, why: string): void {
    const actor = job.spec.actor !== undefined
    if (job.attempts > job.maxRetries) {
      this.#fail(job, actor ? 'ACTOR_DIED' : 'WORKER_CRASHED', why)
      return
    }
    job.attempts += 1
    if (!this.#dispatch(job))
      this.#fail(
        job,
        actor ? 'ACTOR_DIED' : 'NO_CAPACITY',
        actor ? `${why}; its actor is dead` : 'no live node is left to run it',
      )
  }

  #dispatch(job: Placed): boolean {
    const actor = job.spec.actor
    const pinned = actor ? this.#registry.get(this.#actorNode(actor.id) ?? '') : undefined
    if (actor && pinned?.state !== 'alive') return false
    const node =
      pinned ??
      place(capable(this.#registry.alive(), job.spec.options), (n) => this.#argumentBytesOn(job.spec, n))
    if (!node) return false
    node.placedSinceBeat += 1
    job.node = node.id
    this.#directory.locate(job.spec.id, node.id)
    this.#outboxes.push(node.id, {
      id: job.spec.id,
      fn: job.spec.fn,
      args: job.spec.args.map((arg) => this.#wireArg(arg, node)),
      options: job.spec.options,
      epoch: job.attempts,
      ...(actor ? { actor } : {}),
      ...(job.spec.parent === undefined ? {} : { parent: job.spec.parent }),
    })
    return true
  }

  /** Small JSON the head holds goes inline; a ref says where its object is, if not on the target. */
  #wireArg(arg: TaskArg, target: ClusterNode): WireArg {
    if (arg.kind !== 'ref') return toWireArg(arg)
    const value = this.#directory.value(arg.id)
    if (value?.kind === 'json') return value
    const holder = this.#directory.lookup(arg.id)?.node
    const at = holder && holder !== target.id ? this.#registry.get(holder)?.address : undefined
    return at ? { kind: 'ref', id: arg.id, at } : { kind: 'ref', id: arg.id }
  }

  #argumentBytesOn(spec: TaskSpec, node: ClusterNode): number {
    let bytes = 0
    for (const arg of spec.args) {
      if (arg.kind !== 'ref') continue
      const record = this.#directory.lookup(arg.id)
      if (record?.node === node.id && !record.inline && record.status === 'ready') bytes += record.size
    }
    return bytes
  }

  #fail(job: Placed, code: 'WORKER_CRASHED' | 'NO_CAPACITY' | 'ACTOR_DIED', message: string): void {
    this.#unplace(job.spec.id)
    this.#directory.settle(job.spec.id, { error: { code, message, attempts: job.attempts } })
  }

  /**
   * Calls a node could not be given: one that stays unreachable is taken for
   * dead (its calls are placed again); one that refused them fails them with why.
   */
  #undeliverable(nodeId: string, calls: OutgoingCall[], cause: unknown): void {
    const refused = !isTransient(cause)
    warn(refused ? 'a node refused calls' : 'a node did not take calls in time', {
      node: nodeId,
      calls: calls.length,
      cause,
    })
    if (!refused) {
      this.#registry.markDead(nodeId)
      return
    }
    const error = serializeError(cause, 'INTERNAL')
    for (const call of calls) {
      const job = this.#placed.get(call.id)
      if (!job || job.node !== nodeId) continue
      this.#unplace(call.id)
      this.#directory.settle(call.id, { error: { ...error, attempts: job.attempts } })
    }
  }
}
