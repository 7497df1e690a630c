/**
 * The head's list of nodes: they register, heartbeat their load, and are
 * marked dead when they fall silent or leave. Time is injectable for tests.
 */
import type { NodeStats } from '../../node/node.ts'
import { NODE_ID, newNodeId } from '../protocol.ts'

export interface ClusterNode {
  id: string
  address: string
  cpus: number
  resources: Record<string, number>
  /** `leaving`: stopping cleanly, takes no new calls, still finishing its running ones. */
  state: 'alive' | 'leaving' | 'dead'
  lastSeen: number
  stats: NodeStats
  /** Calls placed here since the last heartbeat, so that placement sees them at once. */
  placedSinceBeat: number
}

export interface NodeRegistryOptions {
  /** A node silent for this long is dead (default 5000 ms). */
  deadAfterMs?: number
  now?: () => number
  /** Makes the id of a node that did not bring a usable one (default: newNodeId). */
  newId?: () => string
  onDead?: (node: ClusterNode) => void
  /** Told of every node that registers (for the first time, or again). */
  onJoin?: (node: ClusterNode) => void
  /** Sweeps for silent nodes on a timer (default true; tests call sweep themselves). */
  sweep?: boolean
}

/** The stats of a node that has not sent a heartbeat yet. */
export const EMPTY_STATS: NodeStats = {
  cpus: 0,
  running: 0,
  queued: 0,
  steals: 0,
  objects: {
    count: 0,
    bytes: 0,
    spilledCount: 0,
    spilledBytes: 0,
    spills: { count: 0, bytes: 0 },
    restores: { count: 0, bytes: 0 },
    freed: 0,
  },
  tasks: {},
  threadBytes: { copied: 0, shared: 0 },
  stolen: { in: 0, out: 0 },
  fetched: { count: 0, bytes: 0 },
  latency: { durations: {}, waits: {} },
  process: { rss: 0, heapUsed: 0, cpuSeconds: 0 },
}

export class NodeRegistry {
  readonly #nodes = new Map<string, ClusterNode>()
  readonly #deadAfterMs: number
  readonly #now: () => number
  readonly #newId: () => string
  readonly #onDead: (node: ClusterNode) => void
  readonly #onJoin: (node: ClusterNode) => void
  readonly #sweeper: ReturnType<typeof setInterval> | undefined

  constructor(options: NodeRegistryOptions = {}) {
    this.#deadAfterMs = options.deadAfterMs ?? 5000
    this.#now = options.now ?? Date.now
    this.#newId = options.newId ?? newNodeId
    this.#onDead = options.onDead ?? (() => {})
    this.#onJoin = options.onJoin ?? (() => {})
    if (options.sweep !== false) {
      this.#sweeper = setInterval(() => this.sweep(), Math.min(1000, this.#deadAfterMs / 2))
      this.#sweeper.unref()
    }
  }

  /**
   * Registers a node, under the id it chose if that is free and well formed:
   * a node keeps its id when it registers again (after it was taken for dead,
   * or with a head that restarted), so that the ids of its objects still name
   * it. The same node registering twice (its first answer lost) keeps its entry.
   */
  register(address: string, cpus: number, resources: Record<string, number>, wanted?: string): ClusterNode {
    const known = wanted === undefined ? undefined : this.#nodes.get(wanted)
    const usable = wanted !== undefined && NODE_ID.test(wanted)
    const free = usable && (known === undefined || known.state !== 'alive' || known.address === address)
    let id = free ? wanted : this.#newId()
    while (!free && this.#nodes.has(id)) id = this.#newId()
    const node: ClusterNode = {
      id,
      address,
      cpus,
      resources,
      state: 'alive',
      lastSeen: this.#now(),
      stats: { ...EMPTY_STATS, cpus },
      placedSinceBeat: 0,
    }
    this.#nodes.set(node.id, node)
    this.#onJoin(node)
    return node
  }

  /** Records a heartbeat; false if the node is unknown or was declared dead (it must register again). */
  heartbeat(id: string, stats: NodeStats): boolean {
    const node = this.#nodes.get(id)
    if (!node || node.state === 'dead') return false
    node.lastSeen = this.#now()
    node.stats = stats
    node.placedSinceBeat = 0
    return true
  }

  /** Marks nodes dead that have been silent too long. */
  sweep(): void {
    const now = this.#now()
    for (const node of this.#nodes.values()) {
      if (node.state !== 'dead' && now - node.lastSeen > this.#deadAfterMs) this.markDead(node.id)
    }
  }

  markDead(id: string): void {
    const node = this.#nodes.get(id)
    if (!node || node.state === 'dead') return
    node.state = 'dead'
    this.#onDead(node)
  }

  get(id: string): ClusterNode | undefined {
    return this.#nodes.get(id)
  }

  list(): ClusterNode[] {
    return [...this.#nodes.values()]
  }

  /** Ids of the nodes taken for dead (and not back since). */
  dead(): string[] {
    return this.list().flatMap((n) => (n.state === 'dead' ? [n.id] : []))
  }

  alive(): ClusterNode[] {
    return this.list().filter((n) => n.state === 'alive')
  }

  close(): void {
    if (this.#sweeper) clearInterval(this.#sweeper)
  }
}
