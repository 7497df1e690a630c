/**
 * Stealing between nodes: a node with free CPU slots and nothing queued asks
 * the busiest peer (by the load the head last reported) for work, telling it
 * which big objects it holds already, and runs what it gets.
 */
import type { LocalNode } from '../../node/node.ts'
import type { InternalClient } from '../client.ts'
import type { Peer, StolenCall } from '../protocol.ts'

export interface ThiefOptions {
  node: LocalNode
  client: InternalClient
  /** Called with the calls just taken, before they run, to route their results. */
  run(calls: StolenCall[]): void
  /** How often an idle node looks for work, in ms (default 20). */
  everyMs?: number
  /** This node's custom resources: it takes only calls it can run. */
  resources: Record<string, number>
  /** This node's id and address (where the results of what it steals can be read). */
  self(): { id: string; address: string }
}

/** How often an idle node asks a peer not known to be busy, in ms. */
const PROBE_MS = 50

/** Objects of at least this size are worth running next to. */
const BIG_OBJECT = 64 * 1024

export class Thief {
  readonly #options: ThiefOptions
  readonly #timer: ReturnType<typeof setInterval>
  #peers: Peer[] = []
  #busy = false
  #lastProbe = 0

  constructor(options: ThiefOptions) {
    this.#options = options
    this.#timer = setInterval(() => this.#tick(), options.everyMs ?? 20)
    this.#timer.unref()
  }

  setPeers(peers: Peer[]): void {
    this.#peers = peers
  }

  #tick(): void {
    const { node } = this.#options
    if (this.#busy) return
    const load = node.load
    if (load.queued > 0 || load.running >= node.cpus) return
    let victim = this.#peers.filter((p) => p.queued > 0).sort((a, b) => b.queued - a.queued)[0]
    if (!victim) {
      // Loads are as old as the last heartbeat: now and then ask a peer at random anyway.
      if (this.#peers.length === 0 || Date.now() - this.#lastProbe < PROBE_MS) return
      this.#lastProbe = Date.now()
      victim = this.#peers[Math.floor(Math.random() * this.#peers.length)] as Peer
    }
    this.#busy = true
    this.#steal(victim).finally(() => {
      this.#busy = false
    })
  }

  async #steal(victim: Peer): Promise<void> {
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
        return
      }
      this.#options.run(calls)
    } catch {
      // Gone or busy: the next heartbeat says whether it is still there.
      victim.queued = 0
    }
  }

  stop(): void {
    clearInterval(this.#timer)
  }
}
