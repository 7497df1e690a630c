/**
 * Backpressure under overload: clients send `busy(10)` calls as fast as they
 * can, many times what the node can run, for a while; the node answers 429
 * past its bound. Reports the load offered beside what the node can run,
 * what was accepted and refused, that every accepted call settled, and the
 * node's peak resident memory beside the bound stated for it: its memory at
 * the start, plus 64 MiB, plus 4 KiB per call the bound lets wait.
 *
 *   npm run bench:overload -- [--seconds 30] [--max-queued 5000] [--clients 64] [--cpus 2]
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { Pool } from 'undici'
import { startPlatformProcess } from './lib/platform-process.ts'

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '30' },
    'max-queued': { type: 'string', default: '5000' },
    clients: { type: 'string', default: '64' },
    cpus: { type: 'string', default: '2' },
  },
})
const seconds = Number(values.seconds)
const maxQueued = Number(values['max-queued'])
const clients = Number(values.clients)

const platform = await startPlatformProcess(['--cpus', values.cpus, '--max-queued', String(maxQueued)])
const pid = platform.child.pid as number
const rssMb = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024
const baseMb = rssMb()
const pool = new Pool(platform.url, { connections: clients, pipelining: 1 })
const accepted: string[] = []
let refused = 0
let peakMb = baseMb
const sampler = setInterval(() => {
  peakMb = Math.max(peakMb, rssMb())
}, 200)

const until = Date.now() + seconds * 1000
await Promise.all(
  Array.from({ length: clients }, async () => {
    while (Date.now() < until) {
      const { statusCode, body } = await pool.request({
        method: 'POST',
        path: '/v1/functions/busy/invoke',
        body: '[10]',
        headers: { 'content-type': 'application/json' },
      })
      const text = await body.text()
      if (statusCode === 202) accepted.push((JSON.parse(text) as { id: string }).id)
      else if (statusCode === 429) refused += 1
      else throw new Error(`unexpected ${statusCode}: ${text}`)
    }
  }),
)
const sentS = seconds
// Every accepted call settles: wait for them all, in batches.
let settled = 0
const drainStart = Date.now()
for (let i = 0; i < accepted.length; i += 1000) {
  const ids = accepted.slice(i, i + 1000)
  for (;;) {
    const { body } = await pool.request({
      method: 'POST',
      path: '/v1/wait',
      body: JSON.stringify({ ids, numReturns: ids.length, timeout: 60 }),
      headers: { 'content-type': 'application/json' },
    })
    const { ready } = (await body.json()) as { ready: string[] }
    if (ready.length === ids.length) break
  }
  settled += ids.length
}
clearInterval(sampler)
await pool.close()
await platform.stop()
const round = (x: number) => Math.round(x * 10) / 10
console.log(
  JSON.stringify(
    {
      seconds: sentS,
      clients,
      offered_per_s: Math.round((accepted.length + refused) / sentS),
      can_run_per_s: Number(values.cpus) * 100,
      max_queued: maxQueued,
      accepted: accepted.length,
      refused_429: refused,
      settled,
      all_settled: settled === accepted.length,
      drain_s: round((Date.now() - drainStart) / 1000),
      rss_start_mb: round(baseMb),
      rss_peak_mb: round(peakMb),
      rss_bound_mb: round(baseMb + 64 + (maxQueued * 4) / 1024),
    },
    null,
    2,
  ),
)
