/**
 * Deploys to a running cluster, as a user makes them: a head with three
 * one-CPU node processes that have no functions folder, and `magpie deploy`
 * run as a command.
 *
 *   npm run bench:deploy -- [--rounds 5] [--nodes 3]
 *
 * Each round changes the function and measures, from the moment `magpie
 * deploy` starts, the time until a call of the new version is answered on
 * every node (a call is placed on each with a resource only it has), and
 * then the time of a `magpie deploy` of the same content (no-op). Medians.
 */
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs, promisify } from 'node:util'
import { ROOT, startPlatformProcess } from './lib/platform-process.ts'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    nodes: { type: 'string', default: '3' },
  },
})
const rounds = Number(values.rounds)
const count = Number(values.nodes)
if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds must be a positive integer')
if (!Number.isInteger(count) || count < 1) throw new Error('--nodes must be a positive integer')

const run = promisify(execFile)
const BIN = resolve(ROOT, 'bin/magpie.mjs')
const secret = createHash('sha256').update(String(Math.random())).digest('hex').slice(0, 32)
const empty = mkdtempSync(join(tmpdir(), 'magpie-bench-deploy-'))
const head = await startPlatformProcess(['--head', '--secret', secret, '--functions', empty])
const nodes = await Promise.all(
  Array.from({ length: count }, (_, i) =>
    startPlatformProcess([
      '--join',
      head.url,
      '--secret',
      secret,
      '--cpus',
      '1',
      '--resources',
      `{"n${i}":1}`,
    ]),
  ),
)
for (let i = 0; i < 200; i++) {
  const list = (await (await fetch(`${head.url}/v1/nodes`)).json()) as unknown[]
  if (list.length === count) break
  await new Promise((r) => setTimeout(r, 50))
}

const folder = join(empty, 'bench-fn')
mkdirSync(folder)
const write = (tag: string) =>
  writeFileSync(join(folder, 'index.ts'), `export default function benchFn() { return '${tag}' }\n`)

/** Calls the function on node `i` until it answers `tag`. */
async function answered(i: number, tag: string): Promise<void> {
  for (;;) {
    const res = await fetch(`${head.url}/v1/functions/bench-fn/invoke?wait=30`, {
      method: 'POST',
      body: JSON.stringify({ args: [], options: { resources: { [`n${i}`]: 1 } } }),
    })
    if (res.status === 200 && (await res.json()) === tag) return
    await new Promise((r) => setTimeout(r, 5))
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
const toNew: number[] = []
const noop: number[] = []
const cli: number[] = []
try {
  for (let round = 0; round < rounds; round++) {
    const tag = `round-${round}-${Math.random()}`
    write(tag)
    const started = performance.now()
    const { stdout } = await run(process.execPath, [BIN, 'deploy', folder, '--url', head.url], { cwd: ROOT })
    cli.push(performance.now() - started)
    if (!/ new$/m.test(stdout)) throw new Error(`the deploy was not new: ${stdout}`)
    await Promise.all(nodes.map((_, i) => answered(i, tag)))
    toNew.push(performance.now() - started)
    const again = performance.now()
    const second = await run(process.execPath, [BIN, 'deploy', folder, '--url', head.url], { cwd: ROOT })
    noop.push(performance.now() - again)
    if (!/ unchanged$/m.test(second.stdout)) throw new Error(`the redeploy was not a no-op: ${second.stdout}`)
  }
  console.log(
    JSON.stringify(
      {
        nodes: count,
        rounds,
        deploy_to_new_version_on_every_node_ms: Math.round(median(toNew)),
        of_which_magpie_deploy_command_ms: Math.round(median(cli)),
        noop_redeploy_ms: Math.round(median(noop)),
        all_ms: { to_new: toNew.map(Math.round), noop: noop.map(Math.round) },
      },
      null,
      2,
    ),
  )
} finally {
  await Promise.all(nodes.map((n) => n.stop()))
  await head.stop()
  rmSync(empty, { recursive: true, force: true })
}
