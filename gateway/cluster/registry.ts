/**
 * The head's list of nodes: they register, heartbeat their load, and are
 * marked dead when they fall silent or leave. Time is injectable for tests.
 */
import { nanoid } from 'nanoid'
import type { NodeStats } from '../../node/node.ts'

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
  onDead?: (node: ClusterNode) => void
}

/** Node ids: `n` and six letters or digits; the ids of objects a node makes start with it and `_`. */
export const NODE_ID = /^n[A-Za-z0-9]{6}$/

export function newNodeId(): string {
  return `n${nanoid(6).replace(/[-_]/g, 'x')}`
}

/** The node an object id names as its owner, if it names one. */
export function ownerOf(objectId: string): string | undefined {
  const match = /^(n[A-Za-z0-9]{6})_/.exec(objectId)
  return match?.[1]
}

const EMPTY_STATS: NodeStats = {
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
}

export class NodeRegistry {
  readonly #nodes = new Map<string, ClusterNode>()
  readonly #deadAfterMs: number
  readonly #now: () => number
  readonly #onDead: (node: ClusterNode) => void
  readonly #sweeper: ReturnType<typeof setInterval>

  constructor(options: NodeRegistryOptions = {}) {
    this.#deadAfterMs = options.deadAfterMs ?? 5000
    this.#now = options.now ?? Date.now
    this.#onDead = options.onDead ?? (() => {})
    this.#sweeper = setInterval(() => this.sweep(), Math.min(1000, this.#deadAfterMs / 2))
    this.#sweeper.unref()
  }

  /** Registers a node, under the id it chose if that is free and well formed. */
  register(address: string, cpus: number, resources: Record<string, number>, wanted?: string): ClusterNode {
    const free = wanted !== undefined && NODE_ID.test(wanted) && this.#nodes.get(wanted)?.state !== 'alive'
    const node: ClusterNode = {
      id: free ? wanted : newNodeId(),
      address,
      cpus,
      resources,
      state: 'alive',
      lastSeen: this.#now(),
      stats: { ...EMPTY_STATS, cpus },
      placedSinceBeat: 0,
    }
    this.#nodes.set(node.id, node)
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

  alive(): ClusterNode[] {
    return this.list().filter((n) => n.state === 'alive')
  }

  close(): void {
    clearInterval(this.#sweeper)
  }
}
