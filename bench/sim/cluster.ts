/**
 * A cluster of magpie nodes on simulated time, running the seed pipeline's
 * calls through the platform's own scheduling code:
 *
 * - each node's queue is the real WorkScheduler (a deque per worker thread,
 *   nested work to the front of its maker's deque, stealing between threads
 *   by steal.ts);
 * - stealing between nodes is the real Thief (its probes, backoff, nudges
 *   and looking when a call ends), on this clock, with the share a victim
 *   gives (`stealShare`) and its preference for calls whose big arguments
 *   the thief holds, as node-process.ts does;
 * - the head places the top-level call with the real `place`, and answers
 *   heartbeats (every HEARTBEAT_MS) with the peers' loads, as routes.ts does;
 * - results of stolen calls go to their owner in reports gathered for
 *   REPORT_GATHER_MS, the last at once, as reports.ts does.
 *
 * What is modelled, not run: worker threads (a call takes its work plus a
 * per-call overhead of CPU; all workers share `cores`, each at
 * min(1, cores / busy) of a core), and the network (each message takes
 * `latencyMs`; an object of 64 KiB or more also holds the sender's and the
 * receiver's link for its size over `bandwidthMBps`). A call's arguments
 * are fetched to the node it is queued on before it queues, once per
 * object and node, as the node's task runner does.
 */
import { place } from '../../cluster/head/placement.ts'
import type { ClusterNode } from '../../cluster/head/registry.ts'
import { HEARTBEAT_MS } from '../../cluster/node/membership.ts'
import { REPORT_GATHER_MS } from '../../cluster/node/reports.ts'
import { stealShare, Thief, type ThiefNode } from '../../cluster/node/thief.ts'
import type { Nudge, Peer, StealRequest, StolenCall } from '../../cluster/protocol.ts'
import {
  BYTES,
  COMPILE_MS,
  EXTRACT_MS,
  GROUPS,
  PER_ITEM_MS,
  POST_MS,
  PREP_MS,
  SOURCES,
  samplesOf,
} from '../../functions/_lib/seed.ts'
import { WorkScheduler } from '../../node/scheduler/scheduler.ts'
import type { SimClock } from './clock.ts'

export interface SimParams {
  nodes: number
  workersPerNode: number
  /** Cores all worker threads share (Infinity: a core each). */
  cores: number
  /** The pipeline's sources and groups, this many times over (one driver). */
  copies: number
  /** Divides every cost, as bench:seed's --scale. */
  scale: number
  /** One message between two nodes, in ms. */
  latencyMs: number
  /** A link's bandwidth, in MB/s, for objects of 64 KiB or more. */
  bandwidthMBps: number
  /** CPU a call costs beside its own work (the platform's share), in ms. */
  callOverheadMs: number
  /** CPU a call run on another node than its owner's costs beside that (the steal, its report), in ms. */
  stolenCallOverheadMs: number
  /**
   * A model of a change not built: a call queues once its arguments are
   * settled anywhere, and they are fetched where it runs, by the thread
   * about to run it (which waits meanwhile), instead of to the node where
   * it queues. What it would give, not what magpie does.
   */
  argsWhereRun?: boolean
}

export interface SimResult {
  makespan_s: number
  ideal_s: number
  efficiency: number
  tasks: number
  /** Calls that moved between nodes, per call. */
  steals_per_task: number
  /** Requests for work between nodes, per call (those that found nothing too). */
  steal_requests_per_task: number
  /** Calls taken by one thread from another's deque on the same node, per call. */
  thread_steals_per_task: number
  /** Bytes of objects fetched into a node, on average, and into the one that took most. */
  bytes_moved_per_node: number
  max_bytes_into_a_node: number
}

const BIG = 64 * 1024
const SMALL_RESULT = 64

interface SimTask {
  id: number
  work: number
  args: number[]
  outBytes: number
  owner: SimNode
  /** The worker whose call made it, on its owner (front of that deque). */
  origin: number | undefined
}

interface SimObject {
  bytes: number
  holders: SimNode[]
  /** Nodes that know it is settled, and what waits there for it. */
  known: Set<SimNode>
  waiting: Map<SimNode, Array<() => void>>
  /** Copies under way, and what waits for each. */
  fetching: Map<SimNode, Array<() => void>>
}

/** All worker threads' CPU, shared: processor sharing over `cores`. */
class Cpus {
  #busy = 0
  #virtual = 0
  #at = 0
  #rate = 1
  #next: unknown
  /** Running calls by the virtual time they end at: a binary heap. */
  readonly #ends: Array<{ end: number; done: () => void }> = []

  constructor(
    readonly clock: SimClock,
    readonly cores: number,
  ) {}

  start(work: number, done: () => void): void {
    this.#advance()
    this.#busy += 1
    const heap = this.#ends
    const item = { end: this.#virtual + work, done }
    let i = heap.length
    heap.push(item)
    while (i > 0) {
      const up = (i - 1) >> 1
      if ((heap[up] as typeof item).end <= item.end) break
      heap[i] = heap[up] as typeof item
      i = up
    }
    heap[i] = item
    this.#reschedule()
  }

  #advance(): void {
    const now = this.clock.now()
    this.#virtual += (now - this.#at) * this.#rate
    this.#at = now
  }

  #reschedule(): void {
    this.#rate = this.#busy <= this.cores ? 1 : this.cores / this.#busy
    this.clock.clearTimeout(this.#next)
    const first = this.#ends[0]
    if (!first) return
    this.#next = this.clock.after((first.end - this.#virtual) / this.#rate, () => this.#finish())
  }

  #finish(): void {
    this.#advance()
    const done: Array<() => void> = []
    while (this.#ends.length > 0 && (this.#ends[0] as { end: number }).end <= this.#virtual + 1e-9) {
      done.push(this.#pop())
      this.#busy -= 1
    }
    this.#reschedule()
    for (const fn of done) fn()
  }

  #pop(): () => void {
    const heap = this.#ends
    const top = heap[0] as { end: number; done: () => void }
    const last = heap.pop() as { end: number; done: () => void }
    if (heap.length > 0) {
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        let least = l < heap.length && (heap[l] as typeof last).end < last.end ? l : -1
        const r = l + 1
        if (
          r < heap.length &&
          (heap[r] as typeof last).end < (least < 0 ? last : (heap[least] as typeof last)).end
        )
          least = r
        if (least < 0) break
        heap[i] = heap[least] as typeof last
        i = least
      }
      heap[i] = last
    }
    return top.done
  }
}

interface Owed {
  pending: number
  results: number[]
  timer: unknown
}

/** A link's queue: transfers on it go one after another. */
class Link {
  free = 0
}

export class SimNode implements ThiefNode {
  readonly scheduler: WorkScheduler<SimTask>
  readonly running: Array<SimTask | undefined>
  /** The big objects held, in the order they came (all of this workload's are the same size). */
  readonly #big: number[] = []
  readonly inLink = new Link()
  readonly outLink = new Link()
  thief!: Thief
  bytesIn = 0
  /** Stolen calls running here, by owner, and their results waiting to be reported. */
  readonly forOwner = new Map<SimNode, Owed>()
  readonly store = {
    largest: (minBytes: number, limit: number): string[] => {
      if (minBytes < BIG) throw new RangeError('only big objects are listed')
      return this.#big.slice(-limit).map(String)
    },
  }

  hold(id: number, bytes: number): void {
    if (bytes >= BIG) this.#big.push(id)
  }

  constructor(
    readonly id: string,
    readonly cpus: number,
  ) {
    this.scheduler = new WorkScheduler<SimTask>(cpus)
    this.running = Array.from({ length: cpus }, () => undefined)
  }

  get address(): string {
    return `sim://${this.id}`
  }

  get load(): { queued: number; running: number } {
    let running = 0
    for (const t of this.running) if (t) running += 1
    return { queued: this.scheduler.queued, running }
  }
}

export class SimCluster {
  readonly nodes: SimNode[]
  readonly #byAddress = new Map<string, SimNode>()
  readonly #objects = new Map<number, SimObject>()
  readonly #cpus: Cpus
  readonly #records: ClusterNode[]
  #nextId = 1
  tasks = 0
  stolen = 0
  stealRequests = 0
  #stopped = false

  constructor(
    readonly clock: SimClock,
    readonly params: SimParams,
  ) {
    this.#cpus = new Cpus(clock, params.cores)
    this.nodes = Array.from({ length: params.nodes }, (_, i) => new SimNode(`n${i}`, params.workersPerNode))
    this.#records = this.nodes.map((n) => ({
      id: n.id,
      address: n.address,
      cpus: n.cpus,
      resources: {},
      state: 'alive',
      stats: { running: 0, queued: 0 },
      placedSinceBeat: 0,
    })) as unknown as ClusterNode[]
    for (const node of this.nodes) {
      this.#byAddress.set(node.address, node)
      node.thief = new Thief({
        node,
        clock,
        resources: {},
        self: () => ({ id: node.id, address: node.address }),
        client: {
          steal: (at, body) => this.#steal(node, this.#node(at), body),
          nudge: async (at, body) => this.#nudge(node, this.#node(at), body),
        },
        run: (calls) => {
          for (const call of calls) this.#runStolen(node, (call as unknown as { task: SimTask }).task)
        },
      })
      // Heartbeats, each node at its own phase.
      clock.after(clock.random() * HEARTBEAT_MS, () => this.#beat(node))
    }
  }

  /** The head places the top-level call with the real placement. */
  placeTopLevel(): SimNode {
    const record = place(
      this.#records,
      () => 0,
      () => this.clock.random(),
    ) as ClusterNode
    return this.#node(record.address)
  }

  stop(): void {
    this.#stopped = true
    for (const node of this.nodes) node.thief.stop()
  }

  /** A new object's id, and a call that makes it on `owner`: queued once its arguments are there. */
  submit(
    owner: SimNode,
    spec: { work: number; args: number[]; outBytes: number; origin: number | undefined },
  ): number {
    const task: SimTask = { id: this.#nextId++, owner, ...spec }
    this.tasks += 1
    this.#objects.set(task.id, {
      bytes: task.outBytes,
      holders: [],
      known: new Set(),
      waiting: new Map(),
      fetching: new Map(),
    })
    this.#whenArgsHere(owner, task, () => {
      owner.scheduler.push(task, task.origin, this.#loads(owner))
      this.#dispatch(owner)
      owner.thief.queuedHere()
    })
    return task.id
  }

  /** Runs `fn` once object `id` is known settled at `node`. */
  whenKnown(node: SimNode, id: number, fn: () => void): void {
    const object = this.#objects.get(id) as SimObject
    if (object.known.has(node)) {
      fn()
      return
    }
    const list = object.waiting.get(node) ?? []
    list.push(fn)
    object.waiting.set(node, list)
  }

  /** Time to read a small value held elsewhere: a request and its answer. */
  readCost(node: SimNode, id: number): number {
    const object = this.#objects.get(id) as SimObject
    return object.holders.includes(node) ? 0 : 2 * this.params.latencyMs
  }

  get bytesMoved(): number[] {
    return this.nodes.map((n) => n.bytesIn)
  }

  #node(address: string): SimNode {
    return this.#byAddress.get(address) as SimNode
  }

  #loads(node: SimNode): number[] {
    return node.running.map((t) => (t ? 1 : 0))
  }

  #whenArgsHere(node: SimNode, task: SimTask, ready: () => void): void {
    let missing = task.args.length
    if (missing === 0) {
      ready()
      return
    }
    for (const id of task.args) {
      this.whenKnown(node, id, () => {
        if (this.params.argsWhereRun) {
          if (--missing === 0) ready()
        } else
          this.#fetch(node, id, () => {
            if (--missing === 0) ready()
          })
      })
    }
  }

  /** A copy of object `id` on `node`, fetched from a holder once however many ask. */
  #fetch(node: SimNode, id: number, done: () => void): void {
    const object = this.#objects.get(id) as SimObject
    if (object.holders.includes(node)) {
      done()
      return
    }
    const under = object.fetching.get(node)
    if (under) {
      under.push(done)
      return
    }
    object.fetching.set(node, [done])
    const from = object.holders.reduce((best, h) => (h.outLink.free < best.outLink.free ? h : best))
    this.#transfer(from, node, object.bytes, () => {
      object.holders.push(node)
      node.hold(id, object.bytes)
      node.bytesIn += object.bytes
      const waiting = object.fetching.get(node) ?? []
      object.fetching.delete(node)
      for (const fn of waiting) fn()
    })
  }

  /** A message or object from one node to another. */
  #transfer(from: SimNode, to: SimNode, bytes: number, arrived: () => void, settles = false): void {
    const { latencyMs, bandwidthMBps } = this.params
    if (bytes < BIG || from === to) {
      this.clock.after(from === to ? 0 : latencyMs, arrived, settles)
      return
    }
    const start = Math.max(this.clock.now(), from.outLink.free, to.inLink.free)
    const end = start + bytes / (bandwidthMBps * 1000)
    from.outLink.free = end
    to.inLink.free = end
    this.clock.after(end - this.clock.now() + latencyMs, arrived, settles)
  }

  #dispatch(node: SimNode): void {
    for (let w = 0; w < node.cpus; w++) {
      if (node.running[w]) continue
      const task = node.scheduler.take(w)
      if (!task) continue
      node.running[w] = task
      const { callOverheadMs, stolenCallOverheadMs } = this.params
      const overhead = callOverheadMs + (task.owner === node ? 0 : stolenCallOverheadMs)
      const run = () => this.#cpus.start(task.work + overhead, () => this.#finished(node, w, task))
      let missing = task.args.length
      if (!this.params.argsWhereRun || missing === 0) run()
      else
        for (const id of task.args)
          this.#fetch(node, id, () => {
            if (--missing === 0) run()
          })
    }
  }

  #finished(node: SimNode, worker: number, task: SimTask): void {
    node.running[worker] = undefined
    const object = this.#objects.get(task.id) as SimObject
    object.holders.push(node)
    node.hold(task.id, task.outBytes)
    this.#known(node, task.id)
    if (task.owner !== node) this.#report(node, task)
    this.#dispatch(node)
    node.thief.freed()
  }

  #known(node: SimNode, id: number): void {
    const object = this.#objects.get(id) as SimObject
    if (object.known.has(node)) return
    object.known.add(node)
    const waiting = object.waiting.get(node)
    object.waiting.delete(node)
    for (const fn of waiting ?? []) fn()
  }

  /** The result of a stolen call, to its owner: gathered, the owner's last one at once. */
  #report(node: SimNode, task: SimTask): void {
    const owed = node.forOwner.get(task.owner) as Owed
    owed.results.push(task.id)
    this.#forget(node, task.owner)
  }

  /** One call fewer pending here for `owner`; its results go now if it was the last, else within the window. */
  #forget(node: SimNode, owner: SimNode): void {
    const owed = node.forOwner.get(owner) as Owed
    owed.pending -= 1
    const flush = () => {
      this.clock.clearTimeout(owed.timer)
      owed.timer = undefined
      const ids = owed.results.splice(0)
      if (ids.length === 0) return
      this.#transfer(node, owner, ids.length * SMALL_RESULT, () => {
        for (const id of ids) this.#known(owner, id)
      })
    }
    if (owed.pending === 0) flush()
    else if (owed.results.length > 0) owed.timer ??= this.clock.after(REPORT_GATHER_MS, flush)
  }

  /** A thief's request, answered by its victim as node-process.ts does. */
  #steal(thief: SimNode, victim: SimNode, body: StealRequest): Promise<StolenCall[]> {
    this.stealRequests += 1
    return new Promise((resolve) => {
      this.#transfer(thief, victim, SMALL_RESULT, () => {
        const holds = new Set(body.holds)
        const tasks = victim.scheduler.giveAway(stealShare(victim.load.queued, body.cpus), (t) =>
          t.args.some((a) => holds.has(String(a))),
        )
        this.stolen += tasks.length
        // Calls the victim had stolen itself: their owner now hears from the thief.
        for (const task of tasks) if (task.owner !== victim) this.#forget(victim, task.owner)
        const calls = tasks.map((task) => ({ id: String(task.id), task }) as unknown as StolenCall)
        this.#transfer(victim, thief, SMALL_RESULT * (1 + tasks.length), () => resolve(calls), true)
      })
    })
  }

  #nudge(from: SimNode, to: SimNode, body: Nudge): void {
    this.#transfer(from, to, SMALL_RESULT, () => to.thief.nudged(body))
  }

  #runStolen(node: SimNode, task: SimTask): void {
    const owed = node.forOwner.get(task.owner) ?? { pending: 0, results: [], timer: undefined }
    node.forOwner.set(task.owner, owed)
    if (task.owner !== node) owed.pending += 1
    // Its arguments were ready where it was: known settled here too.
    for (const id of task.args) this.#known(node, id)
    this.#whenArgsHere(node, task, () => {
      node.scheduler.push({ ...task, origin: undefined }, undefined, this.#loads(node))
      this.#dispatch(node)
      node.thief.queuedHere()
    })
  }

  /** A heartbeat to the head, and its answer: the others' loads. */
  #beat(node: SimNode): void {
    if (this.#stopped) return
    const stats = node.load
    this.clock.after(this.params.latencyMs, () => {
      const record = this.#records.find((r) => r.id === node.id) as ClusterNode
      record.stats = { ...record.stats, ...stats }
      const peers: Peer[] = this.#records
        .filter((r) => r.id !== node.id)
        .map((r) => ({
          id: r.id,
          address: r.address,
          queued: r.stats.queued,
          running: r.stats.running,
          cpus: r.cpus,
        }))
      this.clock.after(this.params.latencyMs, () => node.thief.setPeers(peers))
    })
    this.clock.after(HEARTBEAT_MS, () => this.#beat(node))
  }
}

/** The seed pipeline's calls, `copies` times over, made by one driver on the node the head picks. */
export function runPipeline(cluster: SimCluster): { done: () => boolean; makespan: () => number } {
  const { copies, scale } = cluster.params
  const driver = cluster.placeTopLevel()
  const origin = 0
  let finishedAt = Number.NaN
  let compilesLeft = copies * GROUPS
  // Items per group of one copy: result j of sample s of source i has key (i*31 + s*7 + j) % 16.
  const itemsOf = Array.from({ length: GROUPS }, () => 0)
  for (let i = 0; i < SOURCES; i++)
    for (let s = 0; s < samplesOf(i); s++)
      for (let j = 0; j <= s % 3; j++) {
        const key = (i * 31 + s * 7 + j) % GROUPS
        itemsOf[key] = (itemsOf[key] as number) + 1
      }
  const submit = (work: number, args: number[], outBytes: number, then: () => void) => {
    const id = cluster.submit(driver, { work, args, outBytes, origin })
    cluster.whenKnown(driver, id, then)
    return id
  }
  for (let c = 0; c < copies; c++) {
    let samplesLeft = 0
    let plansLeft = SOURCES
    const compile = () => {
      // The results are read in chunks as they come: a last round trip, then one call per group.
      cluster.clock.after(2 * cluster.params.latencyMs, () => {
        for (let g = 0; g < GROUPS; g++) {
          submit((COMPILE_MS + PER_ITEM_MS * (itemsOf[g] as number)) / scale, [], SMALL_RESULT, () => {
            if (--compilesLeft === 0) finishedAt = cluster.clock.now()
          })
        }
      })
    }
    for (let i = 0; i < SOURCES; i++) {
      const data = submit(PREP_MS / scale, [], BYTES, () => {})
      const plan = submit(0, [data], SMALL_RESULT, () => {
        // The driver reads the plan's value, then makes the source's samples.
        cluster.clock.after(cluster.readCost(driver, plan), () => {
          plansLeft -= 1
          for (let s = 0; s < samplesOf(i); s++) {
            samplesLeft += 1
            submit((EXTRACT_MS + POST_MS) / scale, [data], SMALL_RESULT, () => {
              if (--samplesLeft === 0 && plansLeft === 0) compile()
            })
          }
        })
      })
    }
  }
  return { done: () => !Number.isNaN(finishedAt), makespan: () => finishedAt }
}
