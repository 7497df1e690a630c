/**
 * Prometheus metrics of the gateway and the nodes behind it, read from the
 * nodes' own counters at each scrape (prom-client, a registry per gateway):
 * every gauge is as it is at the scrape.
 */
import { createRequire } from 'node:module'
import type * as PromClient from 'prom-client'
import type { Metric, Registry } from 'prom-client'
import type { Backend } from '../node/backend.ts'
import { type HistogramData, SECONDS_BUCKETS } from '../node/recent-tasks.ts'

/** Told of each request once answered: its method, route pattern, status and duration. */
export type RequestObserver = (method: string, route: string, status: number, seconds: number) => void

export interface GatewayMetrics {
  registry: Registry
  /** Times each request (`magpie_http_request_duration_seconds`). */
  observeRequest: RequestObserver
}

/**
 * A histogram kept by the nodes (bucket counts by function, see
 * RecentTasks), shown by node and function as Prometheus histograms are.
 */
function nodeHistogram(
  name: string,
  help: string,
  read: (n: ReturnType<Backend['nodes']>[number]) => Record<string, HistogramData>,
  nodes: () => ReturnType<Backend['nodes']>,
): Metric {
  const metric = {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    get() {
      const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = []
      for (const node of nodes()) {
        for (const [fn, h] of Object.entries(read(node))) {
          const labels = { node: node.id, function: fn }
          let cumulative = 0
          SECONDS_BUCKETS.forEach((le, i) => {
            cumulative += h.counts[i] ?? 0
            values.push({ metricName: `${name}_bucket`, labels: { ...labels, le }, value: cumulative })
          })
          values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: h.count })
          values.push({ metricName: `${name}_sum`, labels, value: h.sum })
          values.push({ metricName: `${name}_count`, labels, value: h.count })
        }
      }
      return { name, help, type: 'histogram', aggregator: 'sum', values }
    },
  }
  return metric as unknown as Metric
}

/**
 * prom-client, loaded when a gateway first makes its metrics: a node
 * process, or a client command, never loads it (a tenth of a second of CPU
 * at every start).
 */
let promClient: typeof PromClient | undefined
function prom(): typeof PromClient {
  promClient ??= createRequire(import.meta.url)('prom-client') as typeof PromClient
  return promClient
}

export function createMetrics(backend: Backend): GatewayMetrics {
  const { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } = prom()
  const registry = new Registry()
  const nodes = () => backend.nodes()
  // This process's own: CPU, memory, heap, event loop lag, handles (the nodes' come with their stats).
  // The lag is sampled once a second: prom-client's default, every 10 ms, woke the node's main thread
  // so often that the seed pipeline at scale 8 took about a tenth longer (bench:seed, side by side).
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 1000 })

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
    [
      'magpie_steals_total',
      'Calls a thread took from another thread’s deque, on this node.',
      (n) => n.steals.in,
    ],
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
  counters.push(
    ['magpie_node_steals_in_total', 'Calls this node took from other nodes.', (n) => n.stolen?.in ?? 0],
    ['magpie_node_steals_out_total', 'Calls other nodes took from this node.', (n) => n.stolen?.out ?? 0],
    ['magpie_node_cpu_seconds_total', 'CPU time of the node’s process.', (n) => n.process?.cpuSeconds ?? 0],
  )
  for (const [name, help, read] of counters) counter(name, help, read)
  gauge(
    'magpie_node_resident_memory_bytes',
    'Resident memory of the node’s process.',
    (n) => n.process?.rss ?? 0,
  )
  gauge(
    'magpie_node_heap_used_bytes',
    'V8 heap in use on the node’s main thread.',
    (n) => n.process?.heapUsed ?? 0,
  )
  new Gauge({
    name: 'magpie_tasks',
    help: 'Calls by state: running on a thread, or queued for one.',
    labelNames: ['node', 'state'] as const,
    registers: [registry],
    collect() {
      this.reset()
      for (const node of nodes()) {
        this.set({ node: node.id, state: 'running' }, node.running)
        this.set({ node: node.id, state: 'queued' }, node.queued)
      }
    },
  })
  new Gauge({
    name: 'magpie_nodes',
    help: 'Nodes by state (alive, leaving, dead).',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      this.reset()
      const counts = { alive: 0, leaving: 0, dead: 0 }
      for (const node of nodes()) counts[node.state] += 1
      for (const [state, n] of Object.entries(counts)) this.set({ state }, n)
    },
  })
  registry.registerMetric(
    nodeHistogram(
      'magpie_task_duration_seconds',
      'How long calls ran, by function, from start to result.',
      (n) => n.latency?.durations ?? {},
      nodes,
    ),
  )
  registry.registerMetric(
    nodeHistogram(
      'magpie_task_queue_seconds',
      'How long calls waited, by function, from submitted to started.',
      (n) => n.latency?.waits ?? {},
      nodes,
    ),
  )
  const requests = new Histogram({
    name: 'magpie_http_request_duration_seconds',
    help: 'HTTP requests to this gateway, by method, route pattern and status, until answered.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [...SECONDS_BUCKETS],
    registers: [registry],
  })
  gauge('magpie_tasks_running', 'Calls handed to worker threads and not finished.', (n) => n.running)
  gauge('magpie_tasks_queued', 'Calls waiting in worker deques.', (n) => n.queued)
  gauge('magpie_objects', 'Objects the node knows of.', (n) => n.objects.count)
  gauge('magpie_object_bytes', 'Bytes of object values held in memory.', (n) => n.objects.bytes)
  gauge('magpie_objects_spilled', 'Objects whose values are on disk.', (n) => n.objects.spilledCount)
  gauge('magpie_object_spilled_bytes', 'Bytes of object values on disk.', (n) => n.objects.spilledBytes)
  return {
    registry,
    observeRequest: (method, route, status, seconds) =>
      requests.observe({ method, route, status: String(status) }, seconds),
  }
}
