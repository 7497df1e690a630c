/**
 * The scheduler simulated (bench/sim/): the seed pipeline, its sources and
 * groups multiplied so that the work per worker thread stays that of scale
 * 1 on 2 threads, through the real WorkScheduler, Thief, stealing share and
 * placement, on simulated time, at 16 to 1,024 worker threads.
 *
 *   npm run bench:sim [-- --latency-ms 0.2 --bandwidth-mbps 1250 --overhead-ms 1.8 --stolen-overhead-ms 2]
 *   npm run bench:sim -- --only here --validate   (runs bench:seed here too, and compares)
 *   npm run bench:sim -- --only 256               (the rows whose name has "256")
 *
 * It prints JSON: one row per configuration (and each row on stderr as it
 * is done). The first two rows are this machine (2 cores shared by all
 * threads, 1 ms a message, 400 MB/s); the others a cluster of one core per
 * thread. The platform's CPU per call defaults to what bench:seed measured
 * here (bench/README.md, "Scale"); --validate measures it first.
 */
import { spawnSync } from 'node:child_process'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { totalWorkMs } from '../functions/_lib/seed.ts'
import { ROOT } from './lib/platform-process.ts'
import { SimClock } from './sim/clock.ts'
import { runPipeline, SimCluster, type SimParams } from './sim/cluster.ts'

const { values } = parseArgs({
  options: {
    'latency-ms': { type: 'string', default: '0.2' },
    'bandwidth-mbps': { type: 'string', default: '1250' },
    'overhead-ms': { type: 'string', default: '1.8' },
    'stolen-overhead-ms': { type: 'string', default: '2' },
    'local-latency-ms': { type: 'string', default: '1' },
    'local-bandwidth-mbps': { type: 'string', default: '400' },
    seed: { type: 'string', default: '1' },
    only: { type: 'string' },
    validate: { type: 'boolean', default: false },
    'args-where-run': { type: 'boolean', default: false },
  },
})
/** A numeric option, checked: a number of at least `min` (the bandwidth must be above 0). */
function num(name: keyof typeof values, min = 0): number {
  const n = Number(values[name])
  if (!Number.isFinite(n) || n < min || (name.includes('bandwidth') && n === 0)) {
    console.error(
      `bench:sim: --${name} must be a number of at least ${min}${name.includes('bandwidth') ? ', above 0' : ''}`,
    )
    process.exit(2)
  }
  return n
}

interface SeedRun {
  efficiency: number
  overhead_us_per_call: number
  calls: number
  steals: number
}

/** One run of bench:seed on this machine. */
function measure(args: string[]): SeedRun {
  const out = spawnSync(process.execPath, ['--import', 'tsx', resolve(ROOT, 'bench/seed.ts'), ...args], {
    encoding: 'utf8',
    cwd: ROOT,
  })
  const text = out.stdout
  if (out.status !== 0 || !text.includes('{'))
    throw new Error(`bench:seed ${args.join(' ')} failed: ${out.stderr}`)
  return JSON.parse(text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1)) as SeedRun
}
export async function simulate(p: SimParams, seed: number) {
  const clock = new SimClock(seed)
  const cluster = new SimCluster(clock, p)
  const run = runPipeline(cluster)
  const started = performance.now()
  await clock.run(run.done)
  cluster.stop()
  const workers = p.nodes * p.workersPerNode
  const ideal = (p.copies * totalWorkMs(p.scale)) / Math.min(p.cores, workers)
  const makespan = run.makespan()
  const moved = cluster.bytesMoved
  const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d
  return {
    workers,
    nodes: p.nodes,
    cores: Number.isFinite(p.cores) ? p.cores : workers,
    sources: p.copies * 32,
    tasks: cluster.tasks,
    makespan_s: round(makespan / 1000),
    ideal_s: round(ideal / 1000),
    efficiency: round(ideal / makespan),
    steals_per_task: round(cluster.stolen / cluster.tasks, 4),
    steal_requests_per_task: round(cluster.stealRequests / cluster.tasks, 4),
    thread_steals_per_task: round(
      cluster.nodes.reduce((n, x) => n + x.scheduler.steals, 0) / cluster.tasks,
      4,
    ),
    bytes_moved_per_node: Math.round(moved.reduce((a, b) => a + b, 0) / p.nodes),
    max_bytes_into_a_node: Math.max(...moved),
    sim_events: clock.events,
    sim_seconds: round((performance.now() - started) / 1000, 1),
  }
}

const ONE_NODE = ['--scale', '1']
const THREE_NODES = ['--nodes', '3', '--cpus-per-node', '1', '--scale', '1']
/**
 * The platform's CPU per call beside the work: by default as measured here
 * (bench/README.md, "Scale"); with --validate, measured now by bench:seed's
 * CPU accounting: one node's per call, and what a call run on another node
 * costs more, from three nodes' (their difference over the calls stolen).
 */
let callOverheadMs = num('overhead-ms')
let stolenCallOverheadMs = num('stolen-overhead-ms')
const measured = new Map<string[], SeedRun>()
if (values.validate) {
  const one = measure(ONE_NODE)
  const three = measure(THREE_NODES)
  measured.set(ONE_NODE, one).set(THREE_NODES, three)
  callOverheadMs = one.overhead_us_per_call / 1000
  stolenCallOverheadMs = Math.max(
    0,
    ((three.overhead_us_per_call - one.overhead_us_per_call) * three.calls) /
      1000 /
      Math.max(1, three.steals),
  )
  console.error(JSON.stringify({ measured: { one, three }, callOverheadMs, stolenCallOverheadMs }))
}

const here = { latencyMs: num('local-latency-ms'), bandwidthMBps: num('local-bandwidth-mbps') }
const cluster = { latencyMs: num('latency-ms'), bandwidthMBps: num('bandwidth-mbps') }
const common = { scale: 1, callOverheadMs, stolenCallOverheadMs, argsWhereRun: values['args-where-run'] }
const configs: Array<{ name: string; params: SimParams; measure?: string[] }> = [
  {
    name: 'here: 1 node x 2',
    params: { ...common, ...here, nodes: 1, workersPerNode: 2, cores: 2, copies: 1 },
    measure: ONE_NODE,
  },
  {
    name: 'here: 3 nodes x 1',
    params: { ...common, ...here, nodes: 3, workersPerNode: 1, cores: 2, copies: 1 },
    measure: THREE_NODES,
  },
  ...(
    [
      [4, 4],
      [16, 4],
      [64, 4],
      [128, 8],
    ] as const
  ).map(([nodes, per]) => ({
    name: `${nodes * per} workers`,
    params: {
      ...common,
      ...cluster,
      nodes,
      workersPerNode: per,
      cores: Number.POSITIVE_INFINITY,
      copies: (nodes * per) / 2,
    },
  })),
]

const rows = []
for (const config of configs) {
  if (values.only && !config.name.includes(values.only)) continue
  const row: Record<string, unknown> = {
    config: config.name,
    ...(await simulate(config.params, Number(values.seed))),
  }
  const run = config.measure && measured.get(config.measure)
  if (run) {
    row.measured_efficiency = run.efficiency
    row.measured_steals_per_task = Math.round((run.steals / run.calls) * 1e4) / 1e4
    row.error = Math.round(((row.efficiency as number) - run.efficiency) * 1000) / 1000
  }
  rows.push(row)
  console.error(JSON.stringify(row))
}
console.log(JSON.stringify({ date: new Date().toISOString(), rows }, null, 2))
