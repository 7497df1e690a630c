/**
 * Request batching: a model whose cost is a fixed overhead per call plus a
 * little per item (examples/serving), served with `config.batch` and
 * without, under the same load of concurrent HTTP clients (autocannon,
 * `?wait` invocations), in the same run.
 *
 *   npm run bench:batch [-- --clients 64 --seconds 10 --cpus 2]
 */
import { availableParallelism } from 'node:os'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { ROOT, startPlatformProcess } from './lib/platform-process.ts'

const { values } = parseArgs({
  options: {
    clients: { type: 'string', default: '64' },
    seconds: { type: 'string', default: '10' },
    cpus: { type: 'string', default: String(availableParallelism()) },
  },
})
const clients = Number(values.clients)
const seconds = Number(values.seconds)
const round = (x: number, digits = 0) => Math.round(x * 10 ** digits) / 10 ** digits

async function load(url: string, duration: number) {
  const result = await autocannon({
    url,
    method: 'POST',
    body: JSON.stringify([{ text: 'great food, and I love the service' }]),
    headers: { 'content-type': 'application/json' },
    connections: clients,
    duration,
  })
  return {
    requests_per_s: round(result.requests.average),
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    errors: result.errors + result.non2xx + result.timeouts,
  }
}

const platform = await startPlatformProcess([
  '--cpus',
  values.cpus,
  '--functions',
  resolve(ROOT, 'examples/serving/functions'),
  '--log-level',
  'warn',
])
try {
  const url = (name: string) => `${platform.url}/v1/functions/${name}/invoke?wait=30`
  // Warm-up: code loaded on every thread.
  await load(url('model-one'), 1)
  await load(url('model'), 1)
  const single = await load(url('model-one'), seconds)
  const batched = await load(url('model'), seconds)
  console.log(
    JSON.stringify(
      {
        date: new Date().toISOString(),
        clients,
        seconds,
        cpus: Number(values.cpus),
        model: 'examples/serving: 4 ms per call + 0.05 ms per item',
        unbatched: single,
        batched,
        throughput_ratio: round(batched.requests_per_s / single.requests_per_s, 2),
        p99_ratio: round(batched.p99_ms / single.p99_ms, 2),
      },
      null,
      2,
    ),
  )
} finally {
  await platform.stop()
}
