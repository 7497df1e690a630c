/**
 * Prometheus metrics of the gateway and the nodes behind it, read from the
 * nodes' own counters at each scrape (prom-client, a registry per gateway).
 */
import { Counter, Gauge, Registry } from 'prom-client'
import type { Backend } from './backend.ts'

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
  new Counter({
    name: 'magpie_steals_total',
    help: 'Tasks taken from another worker deque.',
    labelNames: ['node'] as const,
    registers: [registry],
    collect() {
      this.reset()
      for (const node of nodes()) this.inc({ node: node.id }, node.steals.in)
    },
  })
  new Counter({
    name: 'magpie_node_fetch_bytes_total',
    help: 'Bytes of objects a node copied from other nodes.',
    labelNames: ['node'] as const,
    registers: [registry],
    collect() {
      this.reset()
      for (const node of nodes()) this.inc({ node: node.id }, node.fetched?.bytes ?? 0)
    },
  })
  const gauge = (name: string, help: string, read: (n: ReturnType<typeof nodes>[number]) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['node'] as const,
      registers: [registry],
      collect() {
        for (const node of nodes()) this.set({ node: node.id }, read(node))
      },
    })
  gauge('magpie_tasks_running', 'Calls handed to worker threads and not finished.', (n) => n.running)
  gauge('magpie_tasks_queued', 'Calls waiting in worker deques.', (n) => n.queued)
  gauge('magpie_objects', 'Objects the node knows of.', (n) => n.objects.count)
  gauge('magpie_object_bytes', 'Bytes of finished objects held in memory.', (n) => n.objects.bytes)
  return registry
}
