/**
 * How the head recovers what it owns: objects lost with a dead node (made
 * again by lineage, or failed as OBJECT_LOST), objects found on the nodes
 * that hold them, and, after a restart, the calls and objects kept in its
 * state, reconciled with the nodes as they join again.
 */
import { BYTES_TYPE } from '../../sdk/codec.ts'
import { type InternalClient, isUnreachable } from '../client.ts'
import { warn } from '../log.ts'
import type { ObjectMeta } from '../protocol.ts'
import type { Directory } from './directory.ts'
import type { Dispatcher } from './dispatcher.ts'
import { type KeptObject, readKeptCall, readKeptObject } from './journal.ts'
import type { ClusterNode, NodeRegistry } from './registry.ts'
import type { StateSnapshot } from './state/store.ts'

/** An id no object has: asking a node for it tells whether the node still answers. */
const PROBE_ID = 'probe-no-object-0'

export interface RecoveryOptions {
  registry: NodeRegistry
  client: InternalClient
  directory: Directory
  dispatcher: Dispatcher
}

/** A restored object held on a node that has not joined again yet. */
interface Awaited {
  id: string
  kept: KeptObject
}

export class Recovery {
  readonly #registry: NodeRegistry
  readonly #client: InternalClient
  readonly #directory: Directory
  readonly #dispatcher: Dispatcher
  /** Restored objects by the node that holds them, until it joins again or the wait is over. */
  readonly #awaiting = new Map<string, Awaited[]>()
  #reconcile: ReturnType<typeof setTimeout> | undefined
  /** Restored calls that no node had, waiting for a node that can run them. */
  readonly #unplaced = new Set<string>()

  constructor(options: RecoveryOptions) {
    this.#registry = options.registry
    this.#client = options.client
    this.#directory = options.directory
    this.#dispatcher = options.dispatcher
  }

  /**
   * What a dead node held is made again where its call may run again
   * (lineage); the rest fails one way everywhere: 410 OBJECT_LOST, naming
   * the node and the call.
   */
  lostWith(
    nodeId: string,
    ids: readonly string[] = this.#directory.heldOn(nodeId).map((r) => r.id),
    fate = 'which died',
  ): void {
    for (const id of ids) {
      const call = this.#dispatcher.lineageOf(id)
      if (this.#dispatcher.rebuild(id)) continue
      const record = this.#directory.lookup(id)
      if (!record) continue
      const what = call
        ? `its call of ${call.fn} ran ${call.attempts} times, its limit (maxRetries ${call.maxRetries})`
        : record.function
          ? `it was made inside a function on that node, which owned it`
          : 'a put cannot be made again'
      const error = {
        code: 'OBJECT_LOST' as const,
        message: `object ${id} was on node ${nodeId}, ${fate}; ${what}`,
      }
      if (record.status === 'ready') this.#directory.lose(id, error)
      else this.#directory.settle(id, { error })
    }
  }

  /**
   * A holder that could not be reached: if a fresh connection is refused too,
   * nothing listens there any more, and it is taken for dead now (rather than
   * when it misses its heartbeats), so that what it held is made again.
   */
  async unreachable(nodeId: string | undefined, err: unknown): Promise<void> {
    const node = this.#registry.get(nodeId ?? '')
    if (!node || node.state === 'dead' || !isUnreachable(err)) return
    const refused = (e: unknown) => (e as NodeJS.ErrnoException | undefined)?.code === 'ECONNREFUSED'
    if (refused(err) || (await this.#client.meta(node.address, PROBE_ID).then(() => false, refused))) {
      this.#registry.markDead(node.id)
    }
  }

  /** Settles a record from a node's meta; while it is unfinished there, waits for it on that node. */
  settleFromMeta(node: ClusterNode, meta: ObjectMeta): void {
    const directory = this.#directory
    if (meta.status === 'ready') {
      directory.settle(meta.id, {
        held: { node: node.id, size: meta.size, contentType: meta.contentType ?? BYTES_TYPE },
      })
    } else if (meta.status === 'failed' || meta.status === 'cancelled') {
      directory.settle(meta.id, {
        error: meta.error ?? { code: 'TASK_CANCELLED', message: 'cancelled' },
        cancelled: meta.status === 'cancelled',
      })
    } else {
      this.#client.meta(node.address, meta.id, 60).then(
        (later) => (later ? this.settleFromMeta(node, later) : directory.delete(meta.id)),
        (err: unknown) =>
          directory.settle(meta.id, {
            error: { code: 'OBJECT_LOST', message: `node ${node.id} is gone: ${(err as Error).message}` },
          }),
      )
    }
  }

  /** Asks nodes for an object, all at once; the one holding it (not a mere copy, if any has it so). */
  async findOnNodes(id: string, nodes: ClusterNode[]): Promise<[ClusterNode, ObjectMeta] | undefined> {
    const answers = await Promise.all(
      nodes.map((node) =>
        this.#client.meta(node.address, id).then(
          (meta) => (meta ? ([node, meta] as [ClusterNode, ObjectMeta]) : undefined),
          () => undefined,
        ),
      ),
    )
    const found = answers.filter((a) => a !== undefined)
    return found.find(([, meta]) => !meta.cached) ?? found[0]
  }

  /**
   * Serves again what the head kept in its state. Settled objects are as
   * they were, but those held on a node wait (unfinished) until that node
   * joins again; calls in flight wait too. After `waitMs`, when the nodes
   * that are coming back have, calls in flight are found on the nodes that
   * run them or run again, and objects whose node did not come back are made
   * again by lineage or lost.
   */
  restore(kept: StateSnapshot, waitMs: number): { calls: number; objects: number } {
    const inFlight: string[] = []
    let objects = 0
    for (const [id, text] of kept.objects) {
      const object = readKeptObject(text)
      if (!object) {
        warn('a kept object could not be read, and is dropped', { object: id })
        continue
      }
      objects += 1
      this.#restoreObject(id, object, kept.calls.get(id))
    }
    for (const [id, text] of kept.calls) {
      if (kept.objects.has(id)) continue
      const call = readKeptCall(id, text)
      if (!call) {
        warn('a kept call could not be read, and is dropped', { call: id })
        continue
      }
      this.#directory.create(id, call.spec.fn, { ttlMs: call.ttlMs, owned: true })
      this.#dispatcher.restored(call.spec, call.attempts)
      inFlight.push(id)
    }
    this.#reconcile = setTimeout(() => void this.#reconcileAfterRestart(inFlight), waitMs)
    this.#reconcile.unref()
    return { calls: inFlight.length, objects }
  }

  /** A node joined: the restored objects it holds are ready again, and restored calls may run there. */
  joined(node: ClusterNode): void {
    for (const id of this.#unplaced) this.#rerun(id)
    const held = this.#awaiting.get(node.id)
    if (!held) return
    this.#awaiting.delete(node.id)
    for (const { id, kept } of held) {
      this.#directory.settle(id, {
        held: { node: node.id, size: kept.size, contentType: kept.contentType ?? BYTES_TYPE },
      })
    }
  }

  close(): void {
    clearTimeout(this.#reconcile)
  }

  #restoreObject(id: string, kept: KeptObject, callText: string | undefined): void {
    const directory = this.#directory
    directory.create(id, kept.fn, { ttlMs: kept.ttlMs, owned: true, createdAt: kept.createdAt })
    if (kept.node !== undefined) directory.locate(id, kept.node, kept.attempts)
    if (kept.status !== 'ready') {
      directory.settle(id, {
        error: kept.error ?? { code: 'TASK_CANCELLED', message: `call ${id} was cancelled` },
        cancelled: kept.status === 'cancelled',
      })
    } else if (kept.value !== undefined) {
      directory.settle(id, { value: { kind: 'json', text: kept.value }, node: kept.node })
    } else if (kept.node !== undefined) {
      const call = callText === undefined ? undefined : readKeptCall(id, callText)
      if (call) this.#dispatcher.restoredLineage(call.spec, kept.attempts)
      const held = this.#awaiting.get(kept.node)
      if (held) held.push({ id, kept })
      else this.#awaiting.set(kept.node, [{ id, kept }])
    }
  }

  #rerun(id: string): void {
    if (this.#dispatcher.rerun(id, 'the head restarted while it was in flight, and no node had it')) {
      this.#unplaced.delete(id)
    } else this.#unplaced.add(id)
  }

  async #reconcileAfterRestart(inFlight: string[]): Promise<void> {
    for (const [nodeId, held] of this.#awaiting) {
      this.lostWith(
        nodeId,
        held.map((h) => h.id),
        'which did not join the head again after it restarted',
      )
    }
    this.#awaiting.clear()
    const alive = this.#registry.alive()
    await Promise.all(
      inFlight.map(async (id) => {
        const record = this.#directory.lookup(id)
        if (!record || (record.status !== 'pending' && record.status !== 'running')) return
        const found = await this.findOnNodes(id, alive)
        if (!found) {
          this.#rerun(id)
          return
        }
        const [node, meta] = found
        if (meta.status === 'pending' || meta.status === 'running') this.#dispatcher.adopt(id, node.id)
        else this.#dispatcher.finished(id, meta.status === 'ready')
        this.settleFromMeta(node, meta)
      }),
    )
  }
}
