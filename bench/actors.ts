/**
 * Actor calls per second, and the memory of idle actors, on a platform in a
 * process of its own (`magpie start --cpus 2`):
 *
 *   npm run bench:actors -- [--calls 20000] [--idle 1000] [--actor-threads N]
 *
 * - inside the node: a function makes the actors and calls them (1:1, one
 *   actor; n:n, 8 actors called at once), sync and async methods;
 * - over HTTP: the SDK calls one actor from one client (1:1), and 8 clients
 *   call 8 actors at once (n:n);
 * - idle: the resident memory of the platform process before and after
 *   making `--idle` actors of a small class, per actor; and tasks per second
 *   (a fan-out of no-op calls inside the node) before and beside them.
 *
 * Ray's published microbenchmarks (Ray 2.9, `ray microbenchmark`): 1:1 async
 * actor calls about 8,800/s, n:n actor calls about 27,000/s.
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { connect } from '../sdk/index.ts'
import { type PlatformProcess, ROOT, startPlatformProcess } from './lib/platform-process.ts'

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '20000' },
    idle: { type: 'string', default: '1000' },
    'actor-threads': { type: 'string' },
  },
})
const calls = Number(values.calls)
const idle = Number(values.idle)
if (!Number.isInteger(calls) || calls < 100) throw new Error('--calls must be an integer of at least 100')
if (!Number.isInteger(idle) || idle < 1) throw new Error('--idle must be a positive integer')

const FUNCTIONS = resolve(ROOT, 'bench/functions')
const threads = values['actor-threads']
const start = () =>
  startPlatformProcess([
    '--functions',
    FUNCTIONS,
    '--cpus',
    '2',
    ...(threads === undefined ? [] : ['--actor-threads', threads]),
  ])
const rssMb = (p: PlatformProcess) => {
  const status = readFileSync(`/proc/${p.child.pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) / 1024
}
const settle = () => new Promise((r) => setTimeout(r, 2000))
let platform = await start()

type Adder = { add: { remote(by: number): import('../sdk/index.ts').ObjectRef<number> } }
class Counter {
  add(_by: number): number {
    return 0
  }
}

try {
  const mp = connect(platform.url)
  const inside = async (cls: string, actors: number) =>
    (await mp.get(mp.remote('bench-actor-driver').remote(cls, actors, Math.floor(calls / actors)), {
      timeout: 300,
    })) as { perSecond: number }

  // Warm up: the threads load the classes.
  await inside('bench-counter', 1)
  const insideSync11 = (await inside('bench-counter', 1)).perSecond
  const insideAsync11 = (await inside('bench-async-counter', 1)).perSecond
  const insideSyncNN = (await inside('bench-counter', 8)).perSecond
  const insideAsyncNN = (await inside('bench-async-counter', 8)).perSecond

  const overHttp = async (cls: string, clients: number) => {
    const sdks = Array.from({ length: clients }, () => connect(platform.url))
    const handles = sdks.map((sdk) => sdk.actor<typeof Counter>(cls).remote() as unknown as Adder)
    await Promise.all(handles.map((h, i) => sdks[i]?.get(h.add.remote(0))))
    const per = Math.floor(calls / clients / 4)
    const started = performance.now()
    await Promise.all(
      handles.map((h, i) =>
        sdks[i]?.get(
          Array.from({ length: per }, () => h.add.remote(1)),
          { timeout: 300 },
        ),
      ),
    )
    const seconds = (performance.now() - started) / 1000
    await Promise.all(sdks.map((sdk) => sdk.close()))
    return Math.round((per * clients) / seconds)
  }
  const httpSync11 = await overHttp('bench-counter', 1)
  const httpAsync11 = await overHttp('bench-async-counter', 1)
  const httpNN = await overHttp('bench-counter', 8)

  await mp.close()
  await platform.stop()

  // Idle actors on a platform of their own, which has made no actor yet: their
  // cost counts the threads they are given too.
  platform = await start()
  const fresh = connect(platform.url)
  const fanout = async () =>
    ((await fresh.get(fresh.remote('bench-fanout').remote(calls), { timeout: 300 })) as { perSecond: number })
      .perSecond
  await fanout()
  const tasksAlone = await fanout()
  await settle()
  const before = rssMb(platform)
  const many = Array.from(
    { length: idle },
    () => fresh.actor<typeof Counter>('bench-counter').remote() as unknown as Adder,
  )
  await fresh.get(
    many.map((h) => h.add.remote(0)),
    { timeout: 300 },
  )
  await settle()
  const after = rssMb(platform)
  // Tasks beside the idle actors: as fast as without them.
  const tasksBeside = await fanout()
  await fresh.close()
  console.log(
    JSON.stringify(
      {
        cpus: 2,
        calls,
        inside_node_calls_per_s: {
          one_to_one_sync: insideSync11,
          one_to_one_async: insideAsync11,
          n_to_n_sync: insideSyncNN,
          n_to_n_async: insideAsyncNN,
        },
        over_http_calls_per_s: {
          one_to_one_sync: httpSync11,
          one_to_one_async: httpAsync11,
          n_to_n_sync: httpNN,
        },
        ray_2_9_reference_calls_per_s: { one_to_one_async: 8800, n_to_n: 27000 },
        idle_actors: idle,
        rss_before_mb: Math.round(before),
        rss_after_mb: Math.round(after),
        rss_per_idle_actor_kb: Math.round(((after - before) * 1024) / idle),
        tasks_per_s_alone: tasksAlone,
        tasks_per_s_beside_idle_actors: tasksBeside,
      },
      null,
      2,
    ),
  )
} finally {
  await platform.stop()
}
