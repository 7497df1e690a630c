/**
 * The seed-pipeline benchmark (shared/workloads/seed-pipeline.md) on magpie, and
 * optionally the Dask anchor in the same invocation.
 *
 *   npm run bench:seed -- --scale 4 [--cpus 2] [--driver nested|sdk] [--compare-dask]
 *   npm run bench:seed -- --nodes 3 --cpus-per-node 1 --scale 1   (a head and 3 node processes)
 *   npm run bench:seed -- --scale 8 --dashboard   (the dashboard open in headless Chromium meanwhile)
 *   npm run bench:seed -- --nodes 4 --cpus-per-node 1 --join-late 1 [--join-after S]
 *       (the last node joins S seconds into the timed run: by default half the ideal makespan)
 *
 * It says the gateway's resident memory before, at most during, and after
 * the timed run (with --nodes, the head's; else the one process's).
 *
 * The platform runs as `magpie start` in its own process and is warmed up
 * first (bundles loaded, burn loops calibrated), as the workload asks: the
 * makespan is timed with the cluster already up.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { GROUPS, SOURCES, samplesOf, totalWorkMs } from '../functions/_lib/seed.ts'
import { type Client, connect, type ObjectRef } from '../sdk/index.ts'
import { ROOT, readCounter, spawnStart, startPlatformProcess } from './lib/platform-process.ts'
import { cpuSince, type ProcessCpu, processTreeCpu } from './lib/thread-cpu.ts'

type Row = { key: number; count: number; sum: number }

const { values } = parseArgs({
  options: {
    scale: { type: 'string', default: '1' },
    cpus: { type: 'string', default: String(availableParallelism()) },
    nodes: { type: 'string' },
    'cpus-per-node': { type: 'string', default: '1' },
    'join-late': { type: 'string', default: '0' },
    'join-after': { type: 'string' },
    driver: { type: 'string', default: 'nested' },
    warmup: { type: 'string' },
    'compare-dask': { type: 'boolean', default: false },
    'dask-script': { type: 'string', default: resolve(ROOT, '../shared/anchors/dask_seed_pipeline.py') },
    python: { type: 'string', default: '/usr/bin/python3' },
    dashboard: { type: 'boolean', default: false },
    chromium: { type: 'string', default: '/usr/bin/chromium' },
  },
})
const scale = Number(values.scale)
const nodes = values.nodes === undefined ? undefined : Number(values.nodes)
if (nodes !== undefined && (!Number.isInteger(nodes) || nodes < 1))
  throw new Error('--nodes must be a positive integer')
const cpusPerNode = Number(values['cpus-per-node'])
const joinLate = Number(values['join-late'])
if (
  !Number.isInteger(joinLate) ||
  joinLate < 0 ||
  (joinLate > 0 && (nodes === undefined || joinLate >= nodes))
)
  throw new Error('--join-late must be an integer from 0 to --nodes minus 1')
/** Worker threads in all, and P: the cores they can use. */
const workers = nodes === undefined ? Number(values.cpus) : nodes * cpusPerNode
const cpus = Math.min(workers, availableParallelism())
if (!(scale > 0)) throw new Error('--scale must be a positive number')
if (!Number.isInteger(cpus) || cpus < 1) throw new Error('--cpus must be a positive integer')
if (values.driver !== 'nested' && values.driver !== 'sdk') throw new Error('--driver must be nested or sdk')
/** What runs before the clock starts: by default two whole runs for the nested driver, only loading and calibrating for the SDK's. */
const warmup = values.warmup ?? (values.driver === 'sdk' ? 'load' : 'runs')
if (warmup !== 'runs' && warmup !== 'load') throw new Error('--warmup must be runs or load')

/** The pipeline driven from this process through the SDK: user code, as a Ray driver script would be. */
async function sdkPipeline(mp: Client, f: number): Promise<Row[]> {
  const prepare = mp.remote('prepare-source')
  const schedule = mp.remote<(i: number, d: Uint8Array) => number[]>('schedule-samples')
  const sample = mp.remote<(...a: unknown[]) => Array<[number, number]>>('process-sample')
  const compile = mp.remote<(...a: unknown[]) => Row>('compile-group')
  const sources = Array.from({ length: SOURCES }, (_, i) => prepare.remote(i, f))
  const plans = sources.map((data, i) => schedule.remote(i, data as never))
  const sourceOf = new Map(plans.map((p, i) => [p.id, i]))
  const samples: ObjectRef<Array<[number, number]>>[] = []
  for await (const [plan, list] of mp.asCompleted(plans)) {
    const i = sourceOf.get(plan.id) as number
    for (const s of list) samples.push(sample.remote(i, s, sources[i], f))
  }
  const groups: number[][] = Array.from({ length: GROUPS }, () => [])
  for await (const [, rows] of mp.asCompleted(samples))
    for (const [key, value] of rows) groups[key]?.push(value)
  return mp.get(groups.map((vals, key) => compile.remote(key, vals, f)))
}

/**
 * The least warm-up: a few calls of each stage per worker thread at a tiny
 * scale, so that every thread has loaded each bundle and calibrated its burn
 * loop. What else the platform warms (its own code's JIT, its caches) it
 * does in the timed run: the first run after `magpie start`.
 */
async function loadAndCalibrate(mp: Client): Promise<void> {
  const tiny = 1e6
  const prepare = mp.remote('prepare-source')
  const n = Math.min(SOURCES, 2 * workers)
  const sources = Array.from({ length: n }, (_, i) => prepare.remote(i, tiny))
  await mp.get(sources)
  await mp.get(sources.map((data, i) => mp.remote('schedule-samples').remote(i, data)))
  await mp.get(sources.map((data, i) => mp.remote('process-sample').remote(i, 0, data, tiny)))
  await mp.get(sources.map((_, i) => mp.remote('compile-group').remote(i % GROUPS, [1, 2], tiny)))
  await mp.free(sources)
}

async function nestedPipeline(mp: Client, f: number): Promise<Row[]> {
  const report = (await mp.get(mp.remote('seed-pipeline').remote({ scale: f }))) as { answer: Row[] }
  return report.answer
}

/** The node's counters that the report differences around the timed run. */
async function counters(url: string) {
  return {
    prepares: await readCounter(url, 'magpie_tasks_total', {
      function: 'prepare-source',
      status: 'finished',
    }),
    copied: await readCounter(url, 'magpie_thread_bytes_total', { how: 'copied' }),
    shared: await readCounter(url, 'magpie_thread_bytes_total', { how: 'shared' }),
    steals: await readCounter(url, 'magpie_steals_total'),
    moved: await readCounter(url, 'magpie_node_fetch_bytes_total'),
  }
}

async function untilNodes(url: string, count: number): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const list = (await (await fetch(`${url}/v1/nodes`)).json()) as Array<{ state: string }>
    if (list.filter((n) => n.state === 'alive').length >= count) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`${count} nodes did not join in time`)
}

function digest(rows: Row[]): string {
  const lines = [...rows]
    .sort((a, b) => a.key - b.key)
    .map((r) => `${r.key},${r.count},${r.sum}\n`)
    .join('')
  return createHash('sha256').update(lines).digest('hex').slice(0, 16)
}

async function runMagpie() {
  const bootStart = performance.now()
  // Nodes that join later need the cluster secret: one made here, which the head takes from the environment.
  if (joinLate > 0) process.env.MAGPIE_CLUSTER_SECRET = randomBytes(24).toString('base64url')
  const platform = await startPlatformProcess(
    nodes === undefined
      ? ['--cpus', String(workers)]
      : ['--nodes', String(nodes - joinLate), '--cpus', String(cpusPerNode)],
  )
  const late: LateNode[] = []
  if (nodes !== undefined) await untilNodes(platform.url, nodes - joinLate)
  const mp = connect(platform.url)
  try {
    const run = values.driver === 'sdk' ? sdkPipeline : nestedPipeline
    // Warm-up: every worker loads the bundles and calibrates its burn loop; with
    // `--warmup runs`, also two whole runs at scale 1000 (as the Dask anchor warms up).
    if (warmup === 'runs') {
      await run(mp, 1000)
      await run(mp, 1000)
    } else await loadAndCalibrate(mp)
    const bootS = (performance.now() - bootStart) / 1000
    // Nodes report their counters with heartbeats: let the warm-up's arrive.
    if (nodes !== undefined) await new Promise((r) => setTimeout(r, 1500))
    const before = await counters(platform.url)
    // The gateway's resident memory through the timed run, with the dashboard open in a browser if asked.
    const browser = values.dashboard ? await openDashboard(platform.url) : undefined
    const rssBefore = rssMb(platform.child.pid)
    let rssMax = rssBefore
    const sampler = setInterval(() => {
      rssMax = Math.max(rssMax, rssMb(platform.child.pid))
    }, 250)
    const platformCpu = processTreeCpu(platform.child.pid as number)
    const driverCpu = process.cpuUsage()
    const ideal = totalWorkMs(scale) / 1000 / cpus
    const joinAfterS = values['join-after'] === undefined ? ideal / 2 : Number(values['join-after'])
    const joining =
      joinLate > 0
        ? setTimeout(() => {
            for (let i = 0; i < joinLate; i++) late.push(joinNode(platform.url))
          }, joinAfterS * 1000)
        : undefined
    const t0 = performance.now()
    const answer = await run(mp, scale).finally(() => {
      clearInterval(sampler)
      clearTimeout(joining)
    })
    const makespan = (performance.now() - t0) / 1000
    const cpu = cpuReport(
      cpuSince(platformCpu, [
        ...processTreeCpu(platform.child.pid as number),
        ...late.flatMap((n) => processTreeCpu(n.child.pid as number)),
      ]),
      process.cpuUsage(driverCpu),
    )
    const joined = await Promise.all(late.map((n) => n.joinedAfterS(t0)))
    const rssAfter = rssMb(platform.child.pid)
    await browser?.close()
    // Nodes report their counters with heartbeats: let the last ones arrive.
    if (nodes !== undefined) await new Promise((r) => setTimeout(r, 1500))
    const after = await counters(platform.url)
    return {
      system: 'magpie',
      driver: values.driver,
      warmup,
      ...(nodes === undefined ? {} : { nodes, cpus_per_node: cpusPerNode }),
      ...(joinLate > 0 ? { joined_late: joinLate, join_started_s: round(joinAfterS), joined_s: joined } : {}),
      workers,
      cores_counted: cpus,
      scale,
      boot_s: round(bootS),
      makespan_s: round(makespan),
      ideal_s: round(ideal),
      efficiency: round(ideal / makespan),
      prepares: after.prepares - before.prepares,
      count: answer.reduce((n, r) => n + r.count, 0),
      answer_sha: digest(answer),
      bytes_copied_between_threads: after.copied - before.copied,
      bytes_shared_between_threads: after.shared - before.shared,
      steals: after.steals - before.steals,
      bytes_moved_between_nodes: after.moved - before.moved,
      cpu_ms: cpu,
      calls: callsPerRun(),
      // CPU beyond the workload's own (its burns) on every thread of the driver and the platform, per call.
      overhead_us_per_call: Math.round(
        ((cpu.driver + cpu.main_threads + cpu.other_threads - totalWorkMs(scale)) * 1000) / callsPerRun(),
      ),
      dashboard_open: values.dashboard,
      gateway_rss_mb: { before: Math.round(rssBefore), max: Math.round(rssMax), after: Math.round(rssAfter) },
    }
  } finally {
    await mp.close()
    await Promise.all(late.map((n) => n.stop()))
    await platform.stop()
  }
}

interface LateNode {
  child: ChildProcess
  /** Seconds from `t0` (performance.now()) until the node said it joined, or null if it had not by the end. */
  joinedAfterS(t0: number): Promise<number | null>
  stop(): Promise<void>
}

/** A node process joining the head at `url` now (`magpie start --join`), as an autoscaler would add one. */
function joinNode(url: string): LateNode {
  const { child, stop } = spawnStart(['--join', url, '--cpus', String(cpusPerNode), '--port', '0'])
  let joinedAt: number | undefined
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk
    if (joinedAt === undefined && /joined/.test(output)) joinedAt = performance.now()
  })
  return {
    child,
    joinedAfterS: async (t0) => (joinedAt === undefined ? null : round((joinedAt - t0) / 1000)),
    stop,
  }
}

/** Calls of one run: prepares, schedules, samples and compiles (and the driver function, nested). */
function callsPerRun(): number {
  let samples = 0
  for (let i = 0; i < SOURCES; i++) samples += samplesOf(i)
  return 2 * SOURCES + samples + GROUPS + (values.driver === 'nested' ? 1 : 0)
}

/**
 * Where the timed run's CPU went, in ms: this process (the driver, through
 * the SDK), the platform's main threads (the gateway, and each node's
 * scheduler: with --nodes, the head's apart) and their other threads
 * (worker threads running the calls, V8's garbage collection helpers).
 */
function cpuReport(platform: ProcessCpu[], driver: NodeJS.CpuUsage) {
  const [first, ...rest] = platform as [ProcessCpu, ...ProcessCpu[]]
  const sum = (list: ProcessCpu[], k: 'main' | 'others') => list.reduce((n, p) => n + p[k], 0)
  return {
    driver: Math.round((driver.user + driver.system) / 1000),
    main_threads: sum(platform, 'main'),
    other_threads: sum(platform, 'others'),
    ...(nodes === undefined
      ? {}
      : {
          head: first.main + first.others,
          node_main_threads: sum(rest, 'main'),
          each_node: rest.map((p) => ({ main: p.main, others: p.others })),
        }),
  }
}

function runDask(): Promise<Record<string, unknown>> {
  return new Promise((done, fail) => {
    const child = spawn(
      values.python,
      [values['dask-script'], '--workers', String(cpus), '--scale', String(scale), '--json'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    )
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk
    })
    child.on('error', fail)
    child.on('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? ''
      if (code !== 0) fail(new Error(`the Dask anchor exited with ${code}: ${out}`))
      else done(JSON.parse(line) as Record<string, unknown>)
    })
  })
}

/** Resident memory of a process, in MiB (the gateway's: with --nodes the head, else the platform with its node). */
function rssMb(pid: number | undefined): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) / 1024
}

/** Opens the dashboard in headless Chromium (playwright-core), which polls the gateway as a user's would. */
async function openDashboard(url: string) {
  const { chromium } = await import('playwright-core')
  const browser = await chromium.launch({
    executablePath: values.chromium,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  })
  const page = await browser.newPage()
  await page.goto(url)
  await page.waitForSelector('#nodes tbody td.state-alive')
  return browser
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000
}

const magpie = await runMagpie()
if (values['compare-dask']) {
  const dask = await runDask()
  const ratio = round(magpie.makespan_s / Number(dask.makespan_s))
  console.log(JSON.stringify({ magpie, dask, makespan_ratio: ratio }, null, 2))
} else {
  console.log(JSON.stringify(magpie, null, 2))
}
