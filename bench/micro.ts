/**
 * Microbenchmarks, each beside its reference measured in the same run:
 *   (a) no-op calls per second submitted from inside a function, beside Piscina
 *       running a no-op on as many threads;
 *   (b) HTTP invocations per second and latency at 32 connections, async and
 *       with ?wait, beside a bare Hono POST handler;
 *   (c) SDK get of ready small objects per second, and put/get MB/s of 1 MiB bytes.
 *
 *   npm run bench:micro [-- --cpus 2 --seconds 5 --calls 50000]
 */
import { spawn } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { Piscina } from 'piscina'
import { connect } from '../sdk/index.ts'
import { ROOT, startPlatformProcess } from './lib/platform-process.ts'

const { values } = parseArgs({
  options: {
    cpus: { type: 'string', default: String(availableParallelism()) },
    seconds: { type: 'string', default: '5' },
    calls: { type: 'string', default: '50000' },
  },
})
const cpus = Number(values.cpus)
const seconds = Number(values.seconds)
const calls = Number(values.calls)

const round = (x: number, digits = 0) => Math.round(x * 10 ** digits) / 10 ** digits

async function nestedNoops(url: string) {
  const mp = connect(url)
  const fanOut = mp.remote<(n: number) => { perSecond: number }>('fan-out')
  await mp.get(fanOut.remote(Math.min(calls, 5000)))
  const runs: number[] = []
  for (let i = 0; i < 3; i++) runs.push((await mp.get(fanOut.remote(calls))).perSecond)
  await mp.close()
  return Math.max(...runs)
}

async function piscinaNoops() {
  const pool = new Piscina({
    filename: resolve(ROOT, 'bench/lib/piscina-noop.mjs'),
    minThreads: cpus,
    maxThreads: cpus,
  })
  await Promise.all(Array.from({ length: 1000 }, () => pool.run(null)))
  const runs: number[] = []
  for (let i = 0; i < 3; i++) {
    const started = performance.now()
    await Promise.all(Array.from({ length: calls }, () => pool.run(null)))
    runs.push(calls / ((performance.now() - started) / 1000))
  }
  await pool.destroy()
  return Math.max(...runs)
}

async function load(url: string) {
  const result = await autocannon({
    url,
    method: 'POST',
    body: '[3]',
    headers: { 'content-type': 'application/json' },
    connections: 32,
    duration: seconds,
  })
  return {
    perSecond: round(result.requests.average),
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    errors: result.errors + result.non2xx,
  }
}

async function bareHono() {
  const child = spawn(process.execPath, [resolve(ROOT, 'bench/lib/bare-hono.mjs')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const url = await new Promise<string>((done) => {
    child.stdout.on('data', (chunk: Buffer) => {
      const match = /listening on (\S+)/.exec(String(chunk))
      if (match?.[1]) done(match[1])
    })
  })
  try {
    await load(`${url}/invoke`)
    return await load(`${url}/invoke`)
  } finally {
    child.kill('SIGTERM')
  }
}

async function sdkObjects(url: string) {
  const mp = connect(url)
  const small = await Promise.all(Array.from({ length: 5000 }, (_, i) => mp.put({ i })))
  await mp.get(small.slice(0, 500))
  let started = performance.now()
  await mp.get(small)
  const getsPerSecond = small.length / ((performance.now() - started) / 1000)

  const mib = new Uint8Array(1 << 20).map((_, i) => i % 251)
  const count = 64
  started = performance.now()
  const big = []
  for (let i = 0; i < count; i++) big.push(await mp.put(mib))
  const putMBps = count / ((performance.now() - started) / 1000)
  started = performance.now()
  for (const ref of big) await mp.get(ref)
  const getMBps = count / ((performance.now() - started) / 1000)
  await mp.close()
  return {
    small_gets_per_second: round(getsPerSecond),
    put_1mib_MBps: round(putMBps),
    get_1mib_MBps: round(getMBps),
  }
}

const platform = await startPlatformProcess(['--cpus', String(cpus)])
try {
  const magpieNoops = await nestedNoops(platform.url)
  const piscina = await piscinaNoops()
  const invoke = `${platform.url}/v1/functions/square/invoke`
  await load(invoke)
  const asyncInvoke = await load(invoke)
  const waitInvoke = await load(`${invoke}?wait=10`)
  const bare = await bareHono()
  const objects = await sdkObjects(platform.url)
  const report = {
    date: new Date().toISOString(),
    cpus,
    nested_noops: {
      magpie_per_second: round(magpieNoops),
      piscina_per_second: round(piscina),
      ratio: round(magpieNoops / piscina, 2),
    },
    http: {
      async: asyncInvoke,
      wait: waitInvoke,
      bare_hono: bare,
      async_vs_bare: round(asyncInvoke.perSecond / bare.perSecond, 2),
    },
    sdk: objects,
  }
  console.log(JSON.stringify(report, null, 2))
} finally {
  await platform.stop()
}
