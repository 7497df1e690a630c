/**
 * The envelope of one node: how much it holds while it still answers at
 * once. Each part starts its own platform (`magpie start`, one worker
 * thread) and, in its state, asks `/healthz` every 20 ms for 2 s:
 *
 *   1. queued calls: a `busy` call holds the thread, then calls of `noop`
 *      are submitted (POST /v1/calls, 10,000 a request) until `--calls`
 *      wait; resident memory per queued call, from the difference;
 *   2. live small objects: `--objects` calls of `square`, run, their results
 *      kept; resident memory per object;
 *   3. long-polls: `--polls` concurrent `GET /v1/objects/:id?wait=30` on a
 *      call that is still running; then the call ends and every poll must
 *      get its value.
 *
 *   npm run bench:envelope [-- --calls 1000000 --objects 100000 --polls 10000]
 *
 * Ray publishes 1M queued tasks on one node and 10,000+ actors as its
 * envelope (docs.ray.io, "Ray scalability envelope").
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { Agent, Pool, request } from 'undici'
import { startPlatformProcess } from './lib/platform-process.ts'

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '1000000' },
    objects: { type: 'string', default: '100000' },
    polls: { type: 'string', default: '10000' },
  },
})
const BATCH = 10_000
for (const name of ['calls', 'objects', 'polls'] as const) {
  const n = Number(values[name])
  if (!Number.isInteger(n) || n < 1) {
    console.error(`bench:envelope: --${name} must be a whole number of at least 1`)
    process.exit(2)
  }
}

const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits

function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024
}

/** /healthz every 20 ms for `ms`: its latencies' median, 99th percentile and most. */
async function health(url: string, ms = 2000) {
  const agent = new Agent({ connections: 1 })
  const times: number[] = []
  const until = performance.now() + ms
  try {
    while (performance.now() < until) {
      const started = performance.now()
      const res = await request(`${url}/healthz`, { dispatcher: agent })
      await res.body.text()
      if (res.statusCode !== 200) throw new Error(`/healthz answered ${res.statusCode}`)
      times.push(performance.now() - started)
      await new Promise((r) => setTimeout(r, 20))
    }
  } finally {
    await agent.close()
  }
  times.sort((a, b) => a - b)
  const at = (q: number) => round(times[Math.min(times.length - 1, Math.floor(q * times.length))] as number)
  return { probes: times.length, p50_ms: at(0.5), p99_ms: at(0.99), max_ms: round(times.at(-1) as number) }
}

async function post(url: string, path: string, body: unknown): Promise<unknown> {
  const res = await request(`${url}${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  })
  const text = await res.body.text()
  if (res.statusCode >= 300) throw new Error(`${path} answered ${res.statusCode}: ${text.slice(0, 200)}`)
  return JSON.parse(text)
}

/** A pause before resident memory is read, for the platform's garbage to be collected (it is not forced). */
async function letMemorySettle(): Promise<void> {
  await new Promise((r) => setTimeout(r, 1500))
}

async function queuedCalls(count: number) {
  const platform = await startPlatformProcess(['--cpus', '1', '--max-queued', String(count + 10)])
  try {
    const { url } = platform
    const pid = platform.child.pid as number
    // The thread is held for the whole part; each noop waits behind it.
    await post(url, '/v1/functions/busy/invoke', [60_000])
    await letMemorySettle()
    const before = rssBytes(pid)
    const started = performance.now()
    for (let sent = 0; sent < count; sent += BATCH) {
      const n = Math.min(BATCH, count - sent)
      await post(
        url,
        '/v1/calls',
        Array.from({ length: n }, () => ({ function: 'noop', args: [] })),
      )
    }
    const submitS = (performance.now() - started) / 1000
    await letMemorySettle()
    const after = rssBytes(pid)
    const nodes = (await (await fetch(`${url}/v1/nodes`)).json()) as Array<{ queued?: number }>
    return {
      queued: nodes[0]?.queued,
      submit_s: round(submitS),
      calls_per_s: Math.round(count / submitS),
      rss_before_mb: round(before / 2 ** 20),
      rss_after_mb: round(after / 2 ** 20),
      bytes_per_queued_call: Math.round((after - before) / count),
      healthz: await health(url),
    }
  } finally {
    await platform.stop()
  }
}

async function liveObjects(count: number) {
  const platform = await startPlatformProcess(['--cpus', '1', '--max-queued', String(count + 10)])
  try {
    const { url } = platform
    const pid = platform.child.pid as number
    await letMemorySettle()
    const before = rssBytes(pid)
    const ids: string[] = []
    for (let sent = 0; sent < count; sent += BATCH) {
      const n = Math.min(BATCH, count - sent)
      const made = (await post(
        url,
        '/v1/calls',
        Array.from({ length: n }, (_, i) => ({ function: 'square', args: [sent + i] })),
      )) as Array<{ id: string }>
      ids.push(...made.map((m) => m.id))
    }
    // Every result is in before the memory is read.
    for (let i = 0; i < ids.length; i += BATCH)
      await post(url, '/v1/wait', { ids: ids.slice(i, i + BATCH), timeout: 60 })
    await letMemorySettle()
    const after = rssBytes(pid)
    const last = ids.at(-1) as string
    const value = await (await fetch(`${url}/v1/objects/${last}`)).json()
    if (value !== (count - 1) ** 2) throw new Error(`the last object is ${value}`)
    return {
      objects: count,
      rss_before_mb: round(before / 2 ** 20),
      rss_after_mb: round(after / 2 ** 20),
      bytes_per_object: Math.round((after - before) / count),
      healthz: await health(url),
    }
  } finally {
    await platform.stop()
  }
}

async function longPolls(count: number) {
  const platform = await startPlatformProcess(['--cpus', '1'])
  const pool = new Pool(platform.url, { connections: count, headersTimeout: 60_000, bodyTimeout: 60_000 })
  try {
    const { url } = platform
    const pid = platform.child.pid as number
    // The call the polls wait for ends well after they are all open and /healthz has been asked.
    const holdMs = 20_000
    const { id } = (await post(url, '/v1/functions/busy/invoke', [holdMs])) as { id: string }
    const before = rssBytes(pid)
    const started = performance.now()
    const polls = Array.from({ length: count }, () =>
      pool.request({ method: 'GET', path: `/v1/objects/${id}?wait=30` }).then(async (res) => ({
        status: res.statusCode,
        body: await res.body.text(),
      })),
    )
    // Every poll's connection is open (its request sent) before /healthz is asked.
    while (pool.stats.connected < count && performance.now() - started < holdMs / 2) {
      await new Promise((r) => setTimeout(r, 100))
    }
    const openS = (performance.now() - started) / 1000
    const connected = pool.stats.connected
    await new Promise((r) => setTimeout(r, 500))
    const during = rssBytes(pid)
    const probe = await health(url)
    const answers = await Promise.all(polls)
    const right = answers.filter((a) => a.status === 200 && a.body === String(holdMs)).length
    return {
      polls: count,
      connected,
      open_s: round(openS),
      answered_with_the_value: right,
      rss_mb_with_polls_open: round(during / 2 ** 20),
      bytes_per_poll: Math.round((during - before) / count),
      healthz: probe,
    }
  } finally {
    await pool.close()
    await platform.stop()
  }
}

const report = {
  date: new Date().toISOString(),
  queued_calls: await queuedCalls(Number(values.calls)),
  live_objects: await liveObjects(Number(values.objects)),
  long_polls: await longPolls(Number(values.polls)),
}
console.log(JSON.stringify(report, null, 2))
