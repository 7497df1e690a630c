/**
 * Deploying functions to a running cluster: `magpie deploy` to a head whose
 * nodes have no functions folder, versions (pinned, kept, removed), bundles
 * refused at deploy, the admin token, `magpie new`, `--watch`, and a head
 * restarted with its functions.
 */
import { execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import {
  freePort,
  type SpawnedHead,
  spawnHead,
  spawnNode,
  stopSpawnedAfterAll,
  until,
} from './cluster-helpers.ts'
import { ROOT } from './helpers.ts'
import { tempDirs } from './temp-dirs.ts'

stopSpawnedAfterAll()
const BIN = join(ROOT, 'bin/magpie.mjs')
const SECRET = 'a-deploy-test-secret-0123456789'

const tempDir = tempDirs('magpie-deploy-')

/** Writes a function folder `name` under `root` whose default export is `body`. */
function writeFunction(root: string, name: string, body: string): string {
  const folder = join(root, name)
  mkdirSync(folder, { recursive: true })
  writeFileSync(join(folder, 'index.ts'), body)
  return folder
}

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], { cwd: ROOT })
    return { code: 0, out: stdout, err: stderr }
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string }
    return { code: err.code, out: err.stdout, err: err.stderr }
  }
}

async function call(url: string, ref: string, args: unknown[], options: object = {}, wait = 30) {
  const res = await fetch(`${url}/v1/functions/${ref}/invoke?wait=${wait}`, {
    method: 'POST',
    body: JSON.stringify({ args, options }),
  })
  return {
    status: res.status,
    body: (await res.json()) as unknown,
    id: res.headers.get('x-magpie-object-id'),
  }
}

const SLOW = (tag: string) => `import { get, put } from 'magpie'
export default async function slow(ms: number) {
  await new Promise((r) => setTimeout(r, ms))
  return '${tag}'
}
`

/** A head on a state folder, started from a folder with no functions, and three nodes with a resource each. */
async function cluster(extra: string[] = []) {
  const state = tempDir()
  const port = String(await freePort())
  const head = await spawnHead(['--port', port, '--state', state, '--secret', SECRET, ...extra])
  const nodes = await Promise.all(
    [0, 1, 2].map((i) => spawnNode({ head: head.url, secret: SECRET, args: ['--resources', `{"n${i}":1}`] })),
  )
  return { head, nodes, state, port }
}

describe('magpie deploy to a head whose nodes have no functions folder', () => {
  let head: SpawnedHead
  let nodes: Awaited<ReturnType<typeof cluster>>['nodes']
  let src: string

  it('deploys a folder of functions, prints name, version and new or unchanged, and runs them on every node', async () => {
    ;({ head, nodes } = await cluster())
    src = tempDir()
    // A dependency from the project's node_modules, bundled in by the CLI: the nodes have no copy.
    mkdirSync(join(src, 'node_modules', 'tiny-greeting'), { recursive: true })
    writeFileSync(
      join(src, 'node_modules', 'tiny-greeting', 'package.json'),
      '{"name":"tiny-greeting","main":"index.js"}',
    )
    writeFileSync(
      join(src, 'node_modules', 'tiny-greeting', 'index.js'),
      "module.exports = (w) => 'hi ' + w\n",
    )
    writeFunction(
      src,
      'greet',
      `import greeting from 'tiny-greeting'\nexport default function greet(who: string) { return greeting(who) }\n`,
    )
    writeFunction(src, 'slow', SLOW('v1'))
    const first = await cli('deploy', src, '--url', head.url)
    expect(first.code).toBe(0)
    expect(first.out).toMatch(/^greet {2}[0-9a-f]{12} {2}new$/m)
    expect(first.out).toMatch(/^slow {2}[0-9a-f]{12} {2}new$/m)
    const again = await cli('deploy', join(src, 'greet'), '--url', head.url)
    expect(again.out).toMatch(/^greet {2}[0-9a-f]{12} {2}unchanged$/m)
    for (const [i, node] of nodes.entries()) {
      const res = await call(head.url, 'greet', ['node'], { resources: { [`n${i}`]: 1 } })
      expect(res.body).toBe('hi node')
      const meta = (await (await fetch(`${head.url}/v1/objects/${res.id}/meta`)).json()) as { node: string }
      expect(meta.node).toBe(node.id)
    }
  }, 120_000)

  it('finishes a running call on its version while new calls take the latest; name@version pins one', async () => {
    const v1 = ((await (await fetch(`${head.url}/v1/functions/slow`)).json()) as { version: string }).version
    const running = await fetch(`${head.url}/v1/functions/slow/invoke`, {
      method: 'POST',
      body: JSON.stringify({ args: [3000] }),
    })
    const runningId = ((await running.json()) as { id: string }).id
    writeFunction(src, 'slow', SLOW('v2'))
    const deployed = await cli('deploy', join(src, 'slow'), '--url', head.url)
    expect(deployed.out).toMatch(/^slow {2}[0-9a-f]{12} {2}new$/m)
    expect((await call(head.url, 'slow', [1])).body).toBe('v2')
    expect((await call(head.url, `slow@${v1}`, [1])).body).toBe('v1')
    // Through the SDK's batch route too.
    const batch = await fetch(`${head.url}/v1/calls`, {
      method: 'POST',
      body: JSON.stringify([{ function: `slow@${v1}`, args: [1] }]),
    })
    const batchId = ((await batch.json()) as Array<{ id: string }>)[0]?.id
    expect(await (await fetch(`${head.url}/v1/objects/${batchId}?wait=30`)).json()).toBe('v1')
    expect(await (await fetch(`${head.url}/v1/objects/${runningId}?wait=30`)).json()).toBe('v1')
    const listed = (await (await fetch(`${head.url}/v1/functions/slow`)).json()) as {
      versions: Array<{ version: string }>
    }
    expect(listed.versions).toHaveLength(2)
    expect(listed.versions[1]?.version).toBe(v1)
  }, 120_000)

  it('removes a function: new calls answer 404, a running one finishes', async () => {
    const running = await fetch(`${head.url}/v1/functions/slow/invoke`, {
      method: 'POST',
      body: JSON.stringify({ args: [1500] }),
    })
    const runningId = ((await running.json()) as { id: string }).id
    expect((await fetch(`${head.url}/v1/functions/slow`, { method: 'DELETE' })).status).toBe(204)
    expect((await call(head.url, 'slow', [1])).status).toBe(404)
    expect((await fetch(`${head.url}/v1/functions/slow`)).status).toBe(404)
    expect(await (await fetch(`${head.url}/v1/objects/${runningId}?wait=30`)).json()).toBe('v2')
  }, 60_000)
})

describe('bundles refused at deploy', () => {
  it('answers 400 with the error for a bundle that does not load, 413 past --max-bundle, and keeps the version before', async () => {
    const { head, state } = await cluster(['--max-bundle', '64KiB'])
    const put = (name: string, body: string) =>
      fetch(`${head.url}/v1/functions/${name}`, { method: 'PUT', body })
    expect((await put('keep', 'export default function keep() { return 1 }')).status).toBe(201)
    const before = new Set(readdirSync(join(state, 'bundles')))
    for (const [body, pattern] of [
      ['export default 42', /neither a function nor a class/],
      ['throw new Error("boom on import")', /boom on import/],
      ['export default function (', /SyntaxError/],
      ['const x = 1', /no default export/],
    ] as const) {
      const res = await put('keep', body)
      expect(res.status).toBe(400)
      expect(JSON.stringify(await res.json())).toMatch(pattern)
    }
    const big = await put('keep', `export default function big() { return '${'x'.repeat(70_000)}' }`)
    expect(big.status).toBe(413)
    expect((await put('Not_Valid', 'export default function f() {}')).status).toBe(400)
    expect((await call(head.url, 'keep', [])).body).toBe(1)
    // Nothing of the refused bundles was left on disk.
    expect(new Set(readdirSync(join(state, 'bundles')))).toEqual(before)
  }, 120_000)
})

describe('the admin token', () => {
  it('is what deploys need when one is set; the token alone is refused, and both call functions', async () => {
    const { head } = await cluster(['--token', 'the-call-token', '--admin-token', 'the-admin-token'])
    const put = (token: string) =>
      fetch(`${head.url}/v1/functions/guarded`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${token}` },
        body: 'export default function guarded() { return "ok" }',
      })
    expect((await put('the-call-token')).status).toBe(403)
    expect((await put('the-admin-token')).status).toBe(201)
    for (const token of ['the-call-token', 'the-admin-token']) {
      const res = await fetch(`${head.url}/v1/functions/guarded/invoke?wait=30`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: '[]',
      })
      expect(await res.json()).toBe('ok')
    }
    const removed = await fetch(`${head.url}/v1/functions/guarded`, {
      method: 'DELETE',
      headers: { authorization: 'Bearer the-call-token' },
    })
    expect(removed.status).toBe(403)
  }, 120_000)
})

describe('a head restarted on its state', () => {
  it('serves every function and version, with no functions folder, to nodes that join it after', async () => {
    const { head, port, state, nodes } = await cluster()
    const v1 = (
      (await (
        await fetch(`${head.url}/v1/functions/kept`, { method: 'PUT', body: 'export default () => 1' })
      ).json()) as {
        version: string
      }
    ).version
    await fetch(`${head.url}/v1/functions/kept`, { method: 'PUT', body: 'export default () => 2' })
    const exited = once(head.child, 'exit')
    head.child.kill('SIGKILL')
    await exited
    for (const node of nodes) node.child.kill('SIGKILL')
    const again = await spawnHead(['--port', port, '--state', state, '--secret', SECRET])
    const fresh = await spawnNode({ head: again.url, secret: SECRET })
    expect((await call(again.url, 'kept', [])).body).toBe(2)
    expect((await call(again.url, `kept@${v1}`, [])).body).toBe(1)
    const meta = (await (await fetch(`${again.url}/v1/functions/kept`)).json()) as { versions: unknown[] }
    expect(meta.versions).toHaveLength(2)
    expect(fresh.id).toBeTruthy()
  }, 120_000)
})

describe('the development loop', () => {
  it('magpie new writes a function folder with a test, which deploys and runs', async () => {
    const dir = tempDir()
    const made = await cli('new', 'say-hi', '--functions', dir)
    expect(made.code).toBe(0)
    expect(existsSync(join(dir, 'say-hi', 'index.ts'))).toBe(true)
    expect(existsSync(join(dir, 'say-hi', 'index.test.ts'))).toBe(true)
    const actor = await cli('new', 'tally', '--actor', '--functions', dir)
    expect(actor.code).toBe(0)
    expect((await cli('new', 'say-hi', '--functions', dir)).code).not.toBe(0)
    const { head } = await cluster()
    expect((await cli('deploy', join(dir, 'say-hi'), '--url', head.url)).code).toBe(0)
    expect((await call(head.url, 'say-hi', ['world'])).body).toBe('hello, world')
  }, 120_000)

  it('--watch deploys a saved folder again within a second, and a syntax error leaves the version before serving', async () => {
    const dir = tempDir()
    writeFunction(dir, 'live', 'export default function live() { return 1 }\n')
    const child = spawn(
      process.execPath,
      [BIN, 'start', '--port', '0', '--cpus', '1', '--functions', dir, '--watch'],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let out = ''
    child.stdout.on('data', (c: Buffer) => {
      out += c
    })
    child.stderr.on('data', (c: Buffer) => {
      out += c
    })
    try {
      await until(() => /magpie listening on/.test(out) && /watching/.test(out), 30_000)
      const url = /magpie listening on (\S+)/.exec(out)?.[1] as string
      expect((await call(url, 'live', [])).body).toBe(1)
      const saved = Date.now()
      writeFunction(dir, 'live', 'export default function live() { return 2 }\n')
      await until(() => /deployed live [0-9a-f]{12}/.test(out), 10_000)
      expect(Date.now() - saved).toBeLessThan(3000)
      expect((await call(url, 'live', [])).body).toBe(2)
      writeFunction(dir, 'live', 'export default function live() { return (\n')
      await until(() => /live not deployed/.test(out), 10_000)
      expect(out).toMatch(/index\.ts:\d+/)
      expect((await call(url, 'live', [])).body).toBe(2)
    } finally {
      const exited = once(child, 'exit')
      child.kill('SIGKILL')
      await exited
    }
  }, 90_000)
})
