/**
 * Where the head places a top-level call: among the live nodes that could
 * ever run it (CPUs and resources), the one holding the most bytes of its
 * arguments; else the less loaded of two picked at random.
 */
import type { CallOptions } from '../../sdk/types.ts'
import { canRun } from '../protocol.ts'
import type { ClusterNode } from './registry.ts'

/** Nodes that could ever run a call with these options. */
export function capable(nodes: readonly ClusterNode[], options: CallOptions): ClusterNode[] {
  return nodes.filter((n) => canRun(options, n.cpus, n.resources))
}

export function load(node: ClusterNode): number {
  return (node.stats.running + node.stats.queued + node.placedSinceBeat) / Math.max(1, node.cpus)
}

/**
 * Picks a node; `bytesOn` tells how many argument bytes a node holds.
 * `random` is injectable for tests.
 */
export function place(
  nodes: readonly ClusterNode[],
  bytesOn: (node: ClusterNode) => number,
  random: () => number = Math.random,
): ClusterNode | undefined {
  if (nodes.length <= 1) return nodes[0]
  let best: ClusterNode | undefined
  let most = 0
  for (const node of nodes) {
    const bytes = bytesOn(node)
    if (bytes > most) {
      most = bytes
      best = node
    }
  }
  if (best) return best
  const a = nodes[Math.floor(random() * nodes.length)] as ClusterNode
  let b = nodes[Math.floor(random() * (nodes.length - 1))] as ClusterNode
  if (b === a) b = nodes[nodes.length - 1] as ClusterNode
  return load(b) < load(a) ? b : a
}
