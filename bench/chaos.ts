/**
 * The seed pipeline with a node killed half way, beside the same run without
 * the kill, on a head with three one-CPU node processes:
 *
 *   npm run bench:chaos -- [--scale 1] [--nodes 3]
 *
 * The driver runs as a nested call; at the midpoint of the undisturbed run's
 * makespan one node that is not the driver's is SIGKILLed. Its calls, the
 * calls it stole and the objects it held are run again by their owners;
 * the report gives both makespans, their ratio and both answers.
 */
import { createHash } from 'node:crypto'
import { parseArgs } from 'node:util'
import { connect } from '../sdk/index.ts'
import { startPlatformProcess } from './lib/platform-process.ts'

type Row = { key: number; count: number; sum: number }

const { values } = parseArgs({
  options: {
    scale: { type: 'string', default: '1' },
    nodes: { type: 'string', default: '3' },
  },
})
const scale = Number(values.scale)
const count = Number(values.nodes)
if (!(scale > 0)) throw new Error('--scale must be a positive number')
if (!Number.isInteger(count) || count < 2) throw new Error('--nodes must be an integer of at least 2')

const secret = createHash('sha256').update(String(Math.random())).digest('hex').slice(0, 32)
const head = await startPlatformProcess(['--head', '--secret', secret])
const nodes = await Promise.all(
  Array.from({ length: count }, () =>
    startPlatformProcess(['--join', head.url, '--secret', secret, '--cpus', '1']),
  ),
)

async function liveNodes(): Promise<Array<{ id: string; address: string; state: string }>> {
  const list = (await (await fetch(`${head.url}/v1/nodes`)).json()) as Array<{
    id: string
    address: string
    state: string
  }>
  return list.filter((n) => n.state === 'alive')
}
while ((await liveNodes()).length < count) await new Promise((r) => setTimeout(r, 100))

const mp = connect(head.url)
const digest = (rows: Row[]) =>
  createHash('sha256')
    .update(
      [...rows]
        .sort((a, b) => a.key - b.key)
        .map((r) => `${r.key},${r.count},${r.sum}\n`)
        .join(''),
    )
    .digest('hex')
    .slice(0, 16)

async function run(f: number, killAfterMs?: number) {
  const started = performance.now()
  const job = mp.remote('seed-pipeline').remote({ scale: f })
  let killed: string | undefined
  if (killAfterMs !== undefined) {
    await new Promise((r) => setTimeout(r, killAfterMs))
    const driver = (await mp.meta(job)).node
    const live = await liveNodes()
    const victim = live.find((n) => n.id !== driver)
    const child = nodes.find((p) => victim && p.url === victim.address)
    if (child) {
      child.child.kill('SIGKILL')
      killed = victim?.id
    }
  }
  const report = (await mp.get(job, { timeout: 600 })) as { answer: Row[] }
  return { makespan: (performance.now() - started) / 1000, sha: digest(report.answer), killed }
}

try {
  // Warm-up: every worker loads the bundles and calibrates its burn loop.
  await run(1000)
  await run(1000)
  const calm = await run(scale)
  const chaos = await run(scale, (calm.makespan * 1000) / 2)
  const round = (x: number) => Math.round(x * 1000) / 1000
  console.log(
    JSON.stringify(
      {
        scale,
        nodes: count,
        makespan_s: round(calm.makespan),
        makespan_with_kill_s: round(chaos.makespan),
        ratio: round(chaos.makespan / calm.makespan),
        killed_at_s: round(calm.makespan / 2),
        killed: chaos.killed ?? null,
        answer_sha: calm.sha,
        answer_sha_with_kill: chaos.sha,
      },
      null,
      2,
    ),
  )
} finally {
  await mp.close()
  await Promise.all(nodes.map((n) => n.stop()))
  await head.stop()
}
