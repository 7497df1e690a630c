/**
 * Stealing between nodes: a node with free CPU slots and nothing queued asks
 * the busiest peer (by the load the head last reported) for work, telling it
 * which big objects it holds already, and runs what it gets.
 *
 * An idle cluster costs next to nothing: a node with calls it cannot start
 * nudges its idle peers (those the head last reported with free slots), at
 * most every NUDGE_MS, and they come at once; without a nudge, an idle node
 * asks a peer at random less and less often (PROBE_MS doubling up to
 * MAX_PROBE_MS), as loads heard from the head are up to a heartbeat old.
 */
import type { InternalClient } from '../client.ts'
import { warn } from '../log.ts'
import type { Nudge, Peer, StolenCall } from '../protocol.ts'

/** What the thief reads of its node (a LocalNode; a simulated one in bench/sim). */
export interface ThiefNode {
  readonly cpus: number
  readonly load: { queued: number; running: number }
  readonly store: { largest(minBytes: number, limit: number): string[] }
}

/**
 * Time, timers and chance as the thief sees them: the process's own
 * (`realClock`), or a simulated clock that drives the same code (bench/sim).
 */
export interface Clock {
  /** Milliseconds, monotonic. */
  now(): number
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(timer: unknown): void
  /** Runs `fn` once this turn of the event loop is over. */
  soon(fn: () => void): void
  random(): number
}

export const realClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout>),
  soon: (fn) => setImmediate(fn),
  random: () => Math.random(),
}

/**
 * Calls a thief may take at once per CPU of its own. Half of a long queue
 * made a thief the next victim of every other idle node: in the simulator
 * (bench:sim, 256 worker threads on 64 nodes) calls moved 3.5 times each
 * on average, and the pipeline ran at 0.39 of ideal; at 8 a CPU, 1.7 times
 * and 0.57. MAGPIE_STEAL_PER_CPU sets it (`Infinity`: half the queue,
 * as before), for such comparisons.
 */
export const STEAL_PER_CPU = stealPerCpu(process.env.MAGPIE_STEAL_PER_CPU)

function stealPerCpu(raw: string | undefined): number {
  if (raw === undefined) return 8
  const n = Number(raw)
  if (n >= 1) return n
  warn('MAGPIE_STEAL_PER_CPU must be a number of at least 1 (or Infinity): 8 is used', { value: raw })
  return 8
}

/**
 * How many of the calls queued at a node a thief may take at once: half,
 * rounded up, and no more than STEAL_PER_CPU for each of its CPUs.
 */
export function stealShare(queued: number, thiefCpus: number): number {
  return Math.min(Math.ceil(queued / 2), STEAL_PER_CPU * thiefCpus)
}

export interface ThiefOptions {
  node: ThiefNode
  client: Pick<InternalClient, 'steal' | 'nudge'>
  clock?: Clock
  /** Called with the calls just taken, before they run, to route their results. */
  run(calls: StolenCall[]): void
  /** How often a node with work about looks for more, in ms (default 20). */
  everyMs?: number
  /** This node's custom resources: it takes only calls it can run. */
  resources: Record<string, number>
  /** This node's id and address (where the results of what it steals can be read). */
  self(): { id: string; address: string }
}

/** How often an idle node asks a peer not known to be busy, in ms: at first, and at most, once each probe found nothing. */
const PROBE_MS = 50
const MAX_PROBE_MS = 1000
/** How often a node with calls waiting nudges its idle peers, at most, in ms. */
const NUDGE_MS = 100
/** How often a node whose threads are all busy looks, in ms: a call ending there makes it look at once (freed). */
const FULL_MS = 200

/** Objects of at least this size are worth running next to. */
const BIG_OBJECT = 64 * 1024

export class Thief {
  readonly #options: ThiefOptions
  readonly #clock: Clock
  readonly #everyMs: number
  #timer: unknown
  #stopped = false
  #peers: Peer[] = []
  #busy = false
  #lastProbe = Number.NEGATIVE_INFINITY
  #probeMs = PROBE_MS
  #lastNudge = Number.NEGATIVE_INFINITY
  #freedQueued = false

  constructor(options: ThiefOptions) {
    this.#options = options
    this.#clock = options.clock ?? realClock
    this.#everyMs = options.everyMs ?? 20
    this.#schedule(this.#everyMs)
  }

  setPeers(peers: Peer[]): void {
    this.#peers = peers
    if (peers.some((p) => p.queued > 0)) this.#schedule(0)
  }

  /** A peer has calls waiting: look there now. */
  nudged(from: Nudge): void {
    const peer = this.#peers.find((p) => p.id === from.id)
    if (peer) peer.queued = Math.max(peer.queued, from.queued, 1)
    this.#probeMs = PROBE_MS
    this.#schedule(0)
  }

  /** A call here ended: once this turn is over, if a thread is free and nothing waits here, look for work at once. */
  freed(): void {
    if (this.#freedQueued) return
    this.#freedQueued = true
    this.#clock.soon(() => {
      this.#freedQueued = false
      const { node } = this.#options
      const load = node.load
      if (!this.#busy && this.#wants(load)) this.#schedule(0)
    })
  }

  /** Calls were queued here: if some wait for a slot, idle peers are told to come for them. */
  queuedHere(): void {
    const now = this.#clock.now()
    if (now - this.#lastNudge < NUDGE_MS) return
    const { queued } = this.#options.node.load
    if (queued === 0) return
    this.#lastNudge = now
    const { id } = this.#options.self()
    for (const peer of this.#peers) {
      if (peer.queued > 0 || peer.running >= peer.cpus) continue
      // A nudge lost is a probe later: nothing to do about it here.
      this.#options.client.nudge(peer.address, { id, queued }).catch(() => {})
    }
  }

  #schedule(ms: number): void {
    if (this.#stopped) return
    this.#clock.clearTimeout(this.#timer)
    this.#timer = this.#clock.setTimeout(() => this.#tick(), ms)
  }

  #tick(): void {
    this.#look()
    // Seldom while every thread here is busy (a call ending calls freed); often while there
    // is work here or known about; else at the next probe.
    const { node } = this.#options
    const load = node.load
    const full = load.queued > 0 || load.running >= node.cpus
    const engaged = this.#busy || load.running > 0 || this.#peers.some((p) => p.queued > 0)
    this.#schedule(
      full
        ? FULL_MS
        : engaged
          ? this.#everyMs
          : Math.max(this.#everyMs, this.#lastProbe + this.#probeMs - this.#clock.now()),
    )
  }

  #look(): void {
    const { node } = this.#options
    if (this.#busy) return
    const load = node.load
    // Work here means work may be about: probe soon again once idle.
    if (load.running > 0) this.#probeMs = PROBE_MS
    if (!this.#wants(load)) return
    let victim = this.#peers.filter((p) => p.queued > 0).sort((a, b) => b.queued - a.queued)[0]
    let probe = false
    if (!victim) {
      // Loads are as old as the last heartbeat: now and then ask a peer at random anyway.
      const now = this.#clock.now()
      if (this.#peers.length === 0 || now - this.#lastProbe < this.#probeMs) return
      this.#lastProbe = now
      victim = this.#peers[Math.floor(this.#clock.random() * this.#peers.length)] as Peer
      probe = true
    }
    this.#busy = true
    void this.#steal(victim).then((got) => {
      this.#busy = false
      if (got > 0) this.#probeMs = PROBE_MS
      else if (probe) this.#probeMs = Math.min(MAX_PROBE_MS, this.#probeMs * 2)
      // More may be there: look again at once.
      if (got > 0) this.#schedule(0)
    })
  }

  /** Whether this node would take calls now: nothing waits here and a thread is free. */
  #wants(load: { queued: number; running: number }): boolean {
    return load.queued === 0 && load.running < this.#options.node.cpus
  }

  /** Asks `victim` for calls and runs them; how many it got (0 if it could not be asked). */
  async #steal(victim: Peer): Promise<number> {
    const { node, client } = this.#options
    try {
      const calls = await client.steal(victim.address, {
        ...this.#options.self(),
        holds: node.store.largest(BIG_OBJECT, 256),
        cpus: node.cpus,
        resources: this.#options.resources,
      })
      if (calls.length === 0) {
        // Its queue emptied since the head last heard: do not ask again before the next report.
        victim.queued = 0
        return 0
      }
      this.#options.run(calls)
      return calls.length
    } catch {
      // Gone or busy: the next heartbeat says whether it is still there.
      victim.queued = 0
      return 0
    }
  }

  stop(): void {
    this.#stopped = true
    this.#clock.clearTimeout(this.#timer)
  }
}
