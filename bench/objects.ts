/**
 * Object store throughput, each figure beside the ceiling of copying the same
 * bytes in plain Node (Uint8Array.set), for 1 MiB and 64 MiB objects:
 *   in_node       a function puts bytes into its node's store and gets them back
 *                 (put copies them once into shared memory; get hands over a view, no copy);
 *   http          a client puts and gets them over loopback HTTP (embedded gateway and node);
 *   node_to_node  a client puts through a head, which stores them on a node; a call
 *                 on another node takes them as its argument, copied node to node.
 * MB/s are 10^6 bytes per second.
 *
 *   npm run bench:objects [-- --total-mib 512]
 */
import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { connect, type ObjectRef } from '../sdk/index.ts'
import { ROOT, startPlatformProcess } from './lib/platform-process.ts'

const { values } = parseArgs({ options: { 'total-mib': { type: 'string', default: '512' } } })
const MiB = 1024 * 1024
const totalBytes = Number(values['total-mib']) * MiB
const SIZES = [1 * MiB, 64 * MiB]
const FUNCTIONS = resolve(ROOT, 'bench/functions')

const mbps = (bytes: number, ms: number) => Math.round(bytes / 1e6 / (ms / 1000))
const label = (size: number) => `${size / MiB}MiB`
const roundsOf = (size: number) => Math.max(4, Math.floor(totalBytes / size))

/**
 * The best of three timings of copying `size` bytes `rounds` times with
 * Uint8Array.set: into one reused buffer (the copy alone), and into a new
 * shared buffer each time (what storing a new object costs at the least:
 * fresh memory is paged in as it is written).
 */
function copyCeiling(size: number): { reused_target: number; fresh_target: number } {
  const source = new Uint8Array(size).fill(1)
  const target = new Uint8Array(size)
  const rounds = roundsOf(size)
  let reused = Number.POSITIVE_INFINITY
  let fresh = Number.POSITIVE_INFINITY
  for (let run = 0; run < 3; run++) {
    let t0 = performance.now()
    for (let i = 0; i < rounds; i++) {
      source[0] = i
      target.set(source)
    }
    reused = Math.min(reused, performance.now() - t0)
    t0 = performance.now()
    for (let i = 0; i < rounds; i++) new Uint8Array(new SharedArrayBuffer(size)).set(source)
    fresh = Math.min(fresh, performance.now() - t0)
  }
  return { reused_target: mbps(size * rounds, reused), fresh_target: mbps(size * rounds, fresh) }
}

async function inNode(url: string, size: number) {
  const mp = connect(url)
  const roundtrip =
    mp.remote<(size: number, rounds: number) => { putMs: number; getMs: number }>('obj-roundtrip')
  const rounds = roundsOf(size)
  await mp.get(roundtrip.remote(size, 2))
  let best = { putMs: Number.POSITIVE_INFINITY, getMs: Number.POSITIVE_INFINITY }
  for (let run = 0; run < 3; run++) {
    const { putMs, getMs } = await mp.get(roundtrip.remote(size, rounds))
    best = { putMs: Math.min(best.putMs, putMs), getMs: Math.min(best.getMs, getMs) }
  }
  await mp.close()
  return { put_MBps: mbps(size * rounds, best.putMs), get_MBps: mbps(size * rounds, best.getMs) }
}

async function overHttp(url: string, size: number) {
  const mp = connect(url)
  const bytes = new Uint8Array(randomBytes(size))
  const rounds = roundsOf(size)
  let t0 = performance.now()
  const refs: ObjectRef[] = []
  for (let i = 0; i < rounds; i++) refs.push(await mp.put(bytes))
  const putMs = performance.now() - t0
  t0 = performance.now()
  for (const ref of refs) await mp.get(ref)
  const getMs = performance.now() - t0
  await mp.free(refs)
  await mp.close()
  return { put_MBps: mbps(size * rounds, putMs), get_MBps: mbps(size * rounds, getMs) }
}

/** Puts through the head (it stores each on a node), then reads each from a call on the other node. */
async function nodeToNode(head: string, size: number) {
  const mp = connect(head)
  const rounds = Math.min(roundsOf(size), 64)
  const bytes = new Uint8Array(randomBytes(size))
  let t0 = performance.now()
  const puts: ObjectRef[] = []
  for (let i = 0; i < rounds; i++) puts.push(await mp.put(bytes))
  const putMs = performance.now() - t0
  // Made on node a, read by calls that only node b can run: every byte crosses between them.
  const make = mp
    .remote<(size: number, seed: number) => Uint8Array>('obj-make')
    .options({ resources: { a: 1 } })
  const made = Array.from({ length: rounds }, (_, i) => make.remote(size, i))
  await mp.wait(made, { numReturns: made.length, timeout: 600 })
  const read = mp.remote<(bytes: Uint8Array) => [number, number]>('obj-size').options({ resources: { b: 1 } })
  t0 = performance.now()
  const sizes = (await mp.get(made.map((ref) => read.remote(ref)))) as Array<[number, number]>
  const getMs = performance.now() - t0
  if (sizes.some(([n]) => n !== size)) throw new Error('a node read the wrong number of bytes')
  await mp.free([...puts, ...made])
  await mp.close()
  return { put_MBps: mbps(size * rounds, putMs), get_MBps: mbps(size * rounds, getMs) }
}

const report: Record<string, unknown> = {
  date: new Date().toISOString(),
  total_mib_per_figure: totalBytes / MiB,
}
const ceiling: Record<string, number> = {}
const ceilings: Record<string, unknown> = {}
for (const size of SIZES) {
  const measured = copyCeiling(size)
  ceilings[label(size)] = measured
  ceiling[label(size)] = measured.fresh_target
}
report.copy_ceiling_MBps = ceilings

const embedded = await startPlatformProcess(['--functions', FUNCTIONS, '--cpus', '2'])
try {
  const node: Record<string, unknown> = {}
  const http: Record<string, unknown> = {}
  for (const size of SIZES) node[label(size)] = await inNode(embedded.url, size)
  for (const size of SIZES) http[label(size)] = await overHttp(embedded.url, size)
  report.in_node = node
  report.http = http
} finally {
  await embedded.stop()
}

const secret = randomBytes(16).toString('hex')
const head = await startPlatformProcess(['--head', '--secret', secret, '--functions', FUNCTIONS])
const members = []
try {
  for (const resources of ['{"a":1}', '{"b":1}']) {
    members.push(
      await startPlatformProcess([
        '--join',
        head.url,
        '--secret',
        secret,
        '--functions',
        FUNCTIONS,
        '--cpus',
        '1',
        '--resources',
        resources,
      ]),
    )
  }
  const between: Record<string, unknown> = {}
  for (const size of SIZES) between[label(size)] = await nodeToNode(head.url, size)
  report.node_to_node = between
} finally {
  await Promise.all(members.map((m) => m.stop()))
  await head.stop()
}

const at = (path: string, size: number, what: 'get_MBps' | 'put_MBps') =>
  (report[path] as Record<string, Record<string, number>>)[label(size)]?.[what] ?? 0
report.targets = {
  in_node_get_64MiB_at_least_1000_MBps: at('in_node', 64 * MiB, 'get_MBps') >= 1000,
  node_to_node_get_at_least_300_MBps: SIZES.every((s) => at('node_to_node', s, 'get_MBps') >= 300),
}
/** Each figure as a share of copying the same bytes into fresh memory. */
report.vs_fresh_copy = Object.fromEntries(
  SIZES.map((s) => [
    label(s),
    {
      in_node_put: Math.round((at('in_node', s, 'put_MBps') / (ceiling[label(s)] ?? 1)) * 100) / 100,
      http_get: Math.round((at('http', s, 'get_MBps') / (ceiling[label(s)] ?? 1)) * 100) / 100,
      node_to_node_get:
        Math.round((at('node_to_node', s, 'get_MBps') / (ceiling[label(s)] ?? 1)) * 100) / 100,
    },
  ]),
)
console.log(JSON.stringify(report, null, 2))
