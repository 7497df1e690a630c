/**
 * A node that joins a head (`magpie start --join URL`): its local node
 * behind the internal API, its membership (joining, heartbeats, joining
 * again), its reports to the owners of what it runs, stealing from peers,
 * and a clean leave that hands back queued calls.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LRUCache } from 'lru-cache'
import { listen } from '../../node/http/listen.ts'
import { type CancelRequest, LocalNode } from '../../node/node.ts'
import { argumentIds } from '../../node/task.ts'
import { backoffDelay } from '../../sdk/backoff.ts'
import type { EncodedValue } from '../../sdk/codec.ts'
import { type SerializedError, serializeError } from '../../sdk/errors.ts'
import { InternalClient, isUnreachable } from '../client.ts'
import { warn } from '../log.ts'
import { Outbox, Outboxes } from '../outbox.ts'
import {
  canRun,
  fromWireArg,
  type Moved,
  newNodeId,
  ownerOf,
  type SettledReport,
  type StealRequest,
  type StolenCall,
  toWireArg,
} from '../protocol.ts'
import { RemoteCatalog } from './catalog.ts'
import { Delegations } from './delegations.ts'
import { internalApi } from './internal-api.ts'
import { Membership } from './membership.ts'
import { Reports } from './reports.ts'
import { stealShare, Thief } from './thief.ts'

/** Stolen calls whose thief a node remembers, to point readers on. */
const MOVED_KEPT = 100_000
/** How long a node keeps asking an object's owner for it while its holder cannot be reached. */
const OWNER_READ_MS = 30_000
/** How long a leaving node lets its running calls finish. */
const LEAVE_GRACE_MS = 30_000

export interface NodeProcessOptions {
  head: string
  secret: string
  /** Where the functions fetched from the head are written (default: a temporary folder, removed on stop). */
  bundleDir?: string | undefined
  cpus?: number | undefined
  resources?: Record<string, number> | undefined
  /** Where to listen (default 127.0.0.1, port 0: a free one). */
  host?: string | undefined
  port?: number | undefined
  /** The URL the head and peers use to reach this node (default: found, see advertisedUrl). */
  advertiseUrl?: string | undefined
  objectStoreMemory?: number | undefined
  /** The longest any call may run, in ms (`--max-call-time`). */
  maxCallTimeMs?: number | undefined
  /** The most heap a worker thread may use, in MiB (`--worker-memory`). */
  workerMemoryMb?: number | undefined
  /** Threads for actors, at most (`--actor-threads`). */
  actorThreads?: number | undefined
  /** What calls wrote, kept for their logs (`--log-retention`). */
  logRetention?: { bytes: number; ageMs: number } | undefined
  /** Bytes one call may write to stdout and stderr (`--max-call-output`). */
  maxCallOutputBytes?: number | undefined
  spillLimit?: number | undefined
  /** Values spill to spill/<node id> in it (default: a temporary folder). */
  stateDir?: string | undefined
}

export async function startNodeProcess(options: NodeProcessOptions) {
  const head = options.head.replace(/\/+$/, '')
  const client = new InternalClient(options.secret)
  const wantedId = newNodeId()
  const tempDir = options.bundleDir === undefined ? await mkdtemp(join(tmpdir(), 'magpie-node-')) : undefined
  const functions = new RemoteCatalog({ client, head, bundleDir: options.bundleDir ?? (tempDir as string) })
  /**
   * Calls placed here that a peer stole, by id: the thief's address, for
   * whoever still looks for them here. Only the recent ones matter (the
   * owner learns where a call ran from its result): a bounded number is kept.
   */
  const moved = new LRUCache<string, string>({ max: MOVED_KEPT })
  /** Calls cancelled before they arrived here (a cancel can overtake its call): refused when they come. */
  const cancelledEarly = new LRUCache<string, true>({ max: MOVED_KEPT })
  /** The other nodes' addresses, by id, as the head last told. */
  const peerAddresses = new Map<string, string>()
  /** Made once the node listens; calls and nudges may come before. */
  let thief: Thief | undefined
  const node = new LocalNode({
    id: wantedId,
    functions,
    submitted: () => thief?.queuedHere(),
    finished: () => thief?.freed(),
    ...(options.cpus === undefined ? {} : { cpus: options.cpus }),
    ...(options.objectStoreMemory === undefined ? {} : { objectStoreMemory: options.objectStoreMemory }),
    maxCallTimeMs: options.maxCallTimeMs,
    workerMemoryMb: options.workerMemoryMb,
    actorThreads: options.actorThreads,
    logRetention: options.logRetention,
    maxCallOutputBytes: options.maxCallOutputBytes,
    ...(options.spillLimit === undefined ? {} : { spillLimit: options.spillLimit }),
    ...(options.stateDir === undefined ? {} : { spillDir: join(options.stateDir, 'spill', wantedId) }),
    fetchRemote: (id, at) => fetchObject(id, at),
    cancelElsewhere: (id, how) => {
      const thief = delegations.thiefOf(id)
      const at = thief ? peerAddresses.get(thief) : moved.get(id)
      delegations.settled(id)
      if (at) sendCancel(at, id, how)
    },
    actorElsewhere: (spec) => {
      // Its class is the head's to find (the function that calls it does not know it).
      const call = {
        id: spec.id,
        fn: 'actor-method',
        args: spec.args.map(toWireArg),
        options: spec.options,
        epoch: 0,
        actor: spec.actor,
      }
      client.callActor(head, call).then(
        () => copyFrom(spec.id, head),
        (err: unknown) => node.store.settle(spec.id, { error: serializeError(err, 'ACTOR_NOT_FOUND') }),
      )
    },
    findActorElsewhere: (nameOrId) => client.findActor(head, nameOrId),
    actorCheckpointed: (id, state) => {
      client
        .actorCheckpoint(head, id, toWireArg(state))
        .catch((err: unknown) => warn('the head did not take an actor checkpoint', { actor: id, cause: err }))
    },
    actorMade: (spec) => {
      const body = {
        id: spec.id,
        class: spec.fn,
        node: membership.id,
        options: spec.options,
        ...(spec.name ? { name: spec.name } : {}),
      }
      client
        .actorMade(head, body)
        .catch((err: unknown) =>
          warn('the head did not hear of an actor made here', { actor: spec.id, cause: err }),
        )
    },
    locate: (id) => {
      const at = moved.get(id)
      if (at) return at
      // An id names the node that made it; any other the head can find.
      const owner = ownerOf(id)
      if (owner === membership.id) return undefined // made here, and gone
      return (owner && peerAddresses.get(owner)) || head
    },
  })
  const self = () => ({ id: membership.id, address: membership.address })

  /**
   * Reads an object from the node at `at`; if that node cannot be reached,
   * from its owner (the head, or the node its id names), which knows whether
   * it is being made again after its node died, and waits for that.
   */
  async function fetchObject(id: string, at: string): Promise<EncodedValue> {
    try {
      return await client.readObject(id, at)
    } catch (err) {
      const owner = ownerOf(id)
      const from = owner ? peerAddresses.get(owner) : head
      if (!isUnreachable(err) || !from || from === at) throw err
      const until = Date.now() + OWNER_READ_MS
      for (let attempt = 0; ; attempt++) {
        try {
          return await client.readObject(id, from)
        } catch (again) {
          // The owner may still point at the dead node until it takes it for dead.
          if (!isUnreachable(again) || Date.now() > until) throw again
          await new Promise((resolve) =>
            setTimeout(resolve, backoffDelay(attempt, { baseMs: 100, maxMs: 1000 })),
          )
        }
      }
    }
  }
  const reports = new Reports({ node, client, self })
  /** Owners that copied big results of calls stolen from them, by the thief that keeps the copy. */
  const releases = new Outboxes<string>(
    (thief) =>
      new Outbox<string>({
        send: (ids) => client.release(thief, ids),
        // The thief keeps its copy pinned, then: said, so that a leak is never silent.
        onGiveUp: (ids, cause) =>
          warn('a thief was not told to let go of results', { thief, results: ids.length, cause }),
      }),
  )

  /** Calls of this node's that run elsewhere: run here again if lost there. */
  const delegations = new Delegations(node)
  /** Owners told of their calls that moved from here to a thief. */
  const movedNotices = new Outboxes<Moved['calls'][number]>(
    (owner) =>
      new Outbox({
        send: (calls) => client.moved(owner, { calls }),
        // An owner that cannot hear it placed them here: they run again when this node dies.
        onGiveUp: (calls, cause) =>
          warn('an owner was not told where its calls went', { owner, calls: calls.length, cause }),
      }),
  )

  const sendCancel = (at: string, id: string, how: CancelRequest) =>
    client
      .cancel(at, id, how)
      .catch((err: unknown) => warn('a node did not hear a cancel', { at, call: id, cause: err }))

  /** Settles an object here with a copy of it from the node at `from`. */
  const copyFrom = (id: string, from: string) =>
    client.readObject(id, from).then(
      (value) => {
        node.countFetched(value)
        node.store.settle(id, { value })
      },
      (err: unknown) => node.store.settle(id, { error: serializeError(err, 'OBJECT_LOST') }),
    )

  /** A peer with nothing to do takes up to half of the calls queued here, and at most STEAL_PER_CPU for each of its CPUs. */
  const steal = (thief: StealRequest): StolenCall[] => {
    const address = self().address
    const max = stealShare(node.load.queued, thief.cpus)
    const holds = new Set(thief.holds)
    const tasks = node.giveAway(max, holds, (t) => canRun(t.options, thief.cpus, thief.resources))
    return tasks.map((task): StolenCall => {
      // The result goes to the call's owner straight, never through this node.
      const owner = reports.ownerOf(task.id) ?? address
      const epoch = reports.epochOf(task.id)
      if (owner === address) delegations.gave(task, thief.id)
      else {
        movedNotices.push(owner, { id: task.id, epoch, thief: thief.id })
        reports.forget(task.id)
        // Others may still look for it here, as the head last knew: point them on.
        moved.set(task.id, thief.address)
        // Calls here that wait for it keep it pending, and get a copy from the thief.
        if (node.store.waitedOn(task.id)) copyFrom(task.id, thief.address)
        else node.store.delete(task.id)
        // The thief reads them from here; they keep their TTL meanwhile. (If this node
        // owns the call, its result comes back here, and its pins keep them till then.)
        for (const id of argumentIds(task)) node.store.seen(id)
      }
      const args = task.args.map((a) =>
        a.kind === 'ref' && !a.at && node.store.has(a.id)
          ? { kind: 'ref' as const, id: a.id, at: address }
          : toWireArg(a),
      )
      const by = task.parent === undefined ? {} : { parent: task.parent }
      return { id: task.id, fn: task.fn, args, options: task.options, epoch, owner, ...by }
    })
  }

  /** Results of calls a peer stole from here. */
  const settled = (report: SettledReport) => {
    for (const o of report.objects) {
      const lostThere = `node ${report.node} could not deliver the result`
      if (o.status === 'lost') {
        if (delegations.has(o.id)) delegations.lost(o.id, lostThere)
        else
          node.store.settle(o.id, {
            error: { code: 'WORKER_CRASHED', message: lostThere, attempts: o.attempts },
          })
      } else if (o.status === 'ready' && o.value === undefined) {
        // Once copied here, the thief's copy is just a copy (kept a while: more calls may want it there).
        client.readObject(o.id, report.address).then(
          (value) => {
            node.countFetched(value)
            delegations.settled(o.id)
            node.store.settle(o.id, { value })
            releases.push(report.address, o.id)
          },
          (err: unknown) => {
            // Gone with its node before it was copied: made again here, if the call may run again.
            if (delegations.has(o.id)) delegations.lost(o.id, `its result was lost with node ${report.node}`)
            else node.store.settle(o.id, { error: serializeError(err, 'OBJECT_LOST') })
          },
        )
      } else {
        delegations.settled(o.id)
        if (o.status === 'ready')
          node.store.settle(o.id, { value: { kind: 'json', text: o.value as string } })
        else
          node.store.settle(o.id, {
            error: o.error ?? { code: 'TASK_CANCELLED', message: 'cancelled' },
            cancelled: o.status === 'cancelled',
          })
      }
    }
  }

  /** Of the versions `refs`, those this node cannot have, with why; the others fetched from the head first. */
  async function missingCode(refs: readonly string[]): Promise<Map<string, SerializedError>> {
    await functions.current()
    const missing = new Map<string, SerializedError>()
    await Promise.all(
      [...new Set(refs)].map(async (ref) => {
        try {
          if (!(await functions.ensure(ref)))
            missing.set(ref, { code: 'FUNCTION_NOT_FOUND', message: `no function ${ref} on the head` })
        } catch (err) {
          missing.set(ref, {
            code: 'WORKER_CRASHED',
            message: `the code of ${ref} could not be had from the head: ${(err as Error).message}`,
          })
        }
      }),
    )
    return missing
  }

  const app = internalApi({
    node,
    missingCode,
    client,
    secret: options.secret,
    ready: () => membership.registered,
    accepted: (id, epoch) => reports.runFor(id, head, epoch),
    movedTo: (id) => moved.get(id),
    steal,
    nudged: (from) => thief?.nudged(from),
    released: (ids) => {
      for (const id of ids) reports.released(id)
    },
    settled,
    cancel: (id, how) => {
      if (node.cancel(id, how)) return
      // Stolen from here and gone: the thief has it. Else it is yet to come.
      const thief = moved.get(id)
      if (thief) sendCancel(thief, id, how)
      else cancelledEarly.set(id, true)
    },
    cancelledBefore: (id) => cancelledEarly.has(id),
    moved: (body) => {
      for (const { id, thief } of body.calls) delegations.moved(id, thief)
    },
  })
  const host = options.host ?? '127.0.0.1'
  const server = await listen(app.fetch, options.port ?? 0, host)
  await node.ready()

  thief = new Thief({
    node,
    client,
    resources: options.resources ?? {},
    self,
    run: async (stolen) => {
      // The versions they were made with, fetched first if this node lacks them.
      const missing = await missingCode(stolen.map((c) => c.fn))
      for (const c of stolen) {
        const spec = {
          id: c.id,
          fn: c.fn,
          args: c.args.map(fromWireArg),
          options: c.options,
          parent: c.parent,
        }
        const why = missing.get(c.fn)
        if (why) node.failUnknown(spec.id, spec.fn, why)
        else if (node.runStolen(spec, c.owner === head)) reports.pinForOwner(c.id)
        reports.runFor(c.id, c.owner, c.epoch)
      }
    },
  })
  const membership = new Membership({
    head,
    client,
    id: wantedId,
    cpus: node.cpus,
    resources: options.resources ?? {},
    advertiseUrl: options.advertiseUrl,
    listening: { host, port: server.port },
    stats: () => node.stats(),
    functions: (revision) => void functions.update(revision),
    peers: (peers, dead) => {
      delegations.dead(dead)
      thief.setPeers(peers)
      peerAddresses.clear()
      for (const peer of peers) peerAddresses.set(peer.id, peer.address)
    },
  })

  let stopping: Promise<void> | undefined
  return {
    get id() {
      return membership.id
    },
    /** The URL the head and peers use for this node (known once it has joined). */
    get address() {
      return membership.address
    },
    /** Where this node listens. */
    listening: server.url,
    /** Resolves once the head has taken this node in (it keeps trying until then). */
    joined: membership.joined,
    /** Whether the head knows this node now. */
    get registered() {
      return membership.registered
    },
    node,
    /** Leaves the cluster: queued calls go back to the head, running ones finish, then everything stops. */
    stop(): Promise<void> {
      stopping ??= (async () => {
        membership.stop()
        thief.stop()
        if (membership.registered) {
          const handedBack = node.takeBackQueued((id) => reports.ownerOf(id) === head)
          for (const id of handedBack) reports.forget(id)
          await client.leave(head, membership.id, handedBack).catch((err: unknown) => {
            // The head then takes this node for dead once it falls silent, and places them again.
            warn('the head did not hear this node leave', { calls: handedBack.length, cause: err })
          })
          const deadline = Date.now() + LEAVE_GRACE_MS
          while (node.load.running > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
          await Promise.race([
            Promise.all([reports.drained(), releases.drained()]),
            new Promise((r) => setTimeout(r, 5000)),
          ])
        }
        await server.close()
        await node.close()
        if (tempDir) await rm(tempDir, { recursive: true, force: true })
      })()
      return stopping
    },
  }
}

export type NodeProcess = Awaited<ReturnType<typeof startNodeProcess>>
