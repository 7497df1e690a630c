/**
 * Prometheus metrics of the gateway and the nodes behind it, read from the
 * nodes' own counters at each scrape (prom-client, a registry per gateway).
 */
import { Counter, Gauge, Registry } from 'prom-client'
import type { Backend } from '../node/backend.ts'

export function createMetrics(backend: Backend): Registry {
  const registry = new Registry()
  const nodes = () => backend.nodes()

  new Counter({
    name: 'magpie_tasks_total',
    help: 'Calls that finished, by function and status (finished or failed).',
    labelNames: ['function', 'status'] as const,
    registers: [registry],
    collect() {
      this.reset()
      for (const node of nodes()) {
        for (const [fn, counts] of Object.entries(node.tasks)) {
          this.inc({ function: fn, status: 'finished' }, counts.finished)
          this.inc({ function: fn, status: 'failed' }, counts.failed)
        }
      }
    },
  })
  new Counter({
    name: 'magpie_thread_bytes_total',
    help: 'Bytes passed between threads of a node, by how: copied or shared (shared memory, no copy).',
    labelNames: ['node', 'how'] as const,
    registers: [registry],
    collect() {
      this.reset()
      for (const node of nodes()) {
        this.inc({ node: node.id, how: 'copied' }, node.threadBytes.copied)
        this.inc({ node: node.id, how: 'shared' }, node.threadBytes.shared)
      }
    },
  })
  type Node = ReturnType<typeof nodes>[number]
  /** A counter per node, read from the node's own count at each scrape. */
  const counter = (name: string, help: string, read: (n: Node) => number) =>
    new Counter({
      name,
      help,
      labelNames: ['node'] as const,
      registers: [registry],
      collect() {
        this.reset()
        for (const node of nodes()) this.inc({ node: node.id }, read(node))
      },
    })
  const gauge = (name: string, help: string, read: (n: Node) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['node'] as const,
      registers: [registry],
      collect() {
        for (const node of nodes()) this.set({ node: node.id }, read(node))
      },
    })
  const counters: Array<[name: string, help: string, read: (n: Node) => number]> = [
    ['magpie_steals_total', 'Tasks taken from another worker deque.', (n) => n.steals.in],
    [
      'magpie_node_fetch_bytes_total',
      'Bytes of objects a node copied from other nodes.',
      (n) => n.fetched?.bytes ?? 0,
    ],
    [
      'magpie_object_spills_total',
      'Values written to disk because memory was full.',
      (n) => n.objects.spills.count,
    ],
    ['magpie_object_spill_bytes_total', 'Bytes of values written to disk.', (n) => n.objects.spills.bytes],
    ['magpie_object_restores_total', 'Spilled values read back from disk.', (n) => n.objects.restores.count],
    [
      'magpie_object_restore_bytes_total',
      'Bytes of spilled values read back.',
      (n) => n.objects.restores.bytes,
    ],
    [
      'magpie_objects_freed_total',
      'Objects freed: deleted, expired, or needed by nothing.',
      (n) => n.objects.freed,
    ],
  ]
  for (const [name, help, read] of counters) counter(name, help, read)
  gauge('magpie_tasks_running', 'Calls handed to worker threads and not finished.', (n) => n.running)
  gauge('magpie_tasks_queued', 'Calls waiting in worker deques.', (n) => n.queued)
  gauge('magpie_objects', 'Objects the node knows of.', (n) => n.objects.count)
  gauge('magpie_object_bytes', 'Bytes of object values held in memory.', (n) => n.objects.bytes)
  gauge('magpie_objects_spilled', 'Objects whose values are on disk.', (n) => n.objects.spilledCount)
  gauge('magpie_object_spilled_bytes', 'Bytes of object values on disk.', (n) => n.objects.spilledBytes)
  return registry
}
