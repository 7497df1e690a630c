/**
 * Per-function configuration and secrets: `env` from 'magpie' gives a call
 * its function's config.env and granted secrets, nothing of another
 * function's on the same thread; a secret's value is never answered, logged
 * or put in a metric; it reaches the nodes, follows a change, and outlives a
 * head restart.
 */
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { freePort, spawnHead, spawnNode, stopSpawnedAfterAll } from './cluster-helpers.ts'
import { ROOT } from './helpers.ts'
import { tempDirs } from './temp-dirs.ts'

stopSpawnedAfterAll()
const BIN = join(ROOT, 'bin/magpie.mjs')
const SECRET = 'a-secrets-test-cluster-secret-01'
const VALUE = `s3cr3t-${Math.random().toString(36).slice(2)}-value`

const tempDir = tempDirs('magpie-secrets-')

/** Runs the CLI with `input` on its stdin. */
function cli(input: string, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args], { cwd: ROOT }, (err, out, errOut) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out, err: errOut }),
    )
    child.stdin?.end(input)
  })
}

/** A function that waits (so that two share its thread), then tells what its env holds. */
function reader(root: string, name: string, config: string): void {
  const folder = join(root, name)
  mkdirSync(folder, { recursive: true })
  writeFileSync(
    join(folder, 'index.ts'),
    `import { env } from 'magpie'
export const config = ${config}
export default async function read(ms: number) {
  const before = env.WHO
  await new Promise((r) => setTimeout(r, ms))
  return { before, after: env.WHO, token: env.TOKEN_A ?? null, keys: Object.keys(env).sort() }
}
`,
  )
}

async function invoke(url: string, fn: string, args: unknown[], options?: object) {
  const res = await fetch(`${url}/v1/functions/${fn}/invoke?wait=30`, {
    method: 'POST',
    body: JSON.stringify(options ? { args, options } : { args }),
  })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

describe('env and secrets', () => {
  it('give each call its own function’s variables and granted secrets, never answer a value, and outlive a restart', async () => {
    const state = tempDir()
    const port = String(await freePort())
    const head = await spawnHead(['--port', port, '--state', state, '--secret', SECRET])
    const node = await spawnNode({ head: head.url, secret: SECRET })
    const url = head.url
    expect(await cli(`${VALUE}\n`, 'secret', 'set', 'TOKEN_A', '--url', url)).toMatchObject({ code: 0 })
    const src = tempDir()
    reader(src, 'env-a', `{ concurrency: 10, env: { WHO: 'a' }, secrets: ['TOKEN_A'] }`)
    reader(src, 'env-b', `{ concurrency: 10, env: { WHO: 'b', ONLY_B: 'x' } }`)
    expect((await cli('', 'deploy', src, '--url', url)).code).toBe(0)

    // Both at once on the one thread of a one-CPU node, interleaved by their waits.
    const [a, b] = await Promise.all([invoke(url, 'env-a', [300]), invoke(url, 'env-b', [150])])
    expect(a.body).toEqual({ before: 'a', after: 'a', token: VALUE, keys: ['TOKEN_A', 'WHO'] })
    expect(b.body).toEqual({ before: 'b', after: 'b', token: null, keys: ['ONLY_B', 'WHO'] })

    // A caller cannot grant itself a secret, nor set variables.
    expect((await invoke(url, 'env-b', [1], { secrets: ['TOKEN_A'] })).status).toBe(400)
    expect((await invoke(url, 'env-b', [1], { env: { WHO: 'me' } })).status).toBe(400)

    // Names only, wherever one looks.
    const listed = await cli('', 'secret', 'list', '--url', url)
    expect(listed.out).toMatch(/^TOKEN_A {2}\S+$/m)
    for (const path of ['/v1/secrets', '/v1/functions', '/v1/functions/env-a', '/v1/nodes', '/metrics']) {
      expect(await (await fetch(`${url}${path}`)).text()).not.toContain(VALUE)
    }
    expect((await fetch(`${url}/v1/secrets/bad-name`, { method: 'PUT', body: VALUE })).status).toBe(400)

    // A new value reaches the next calls.
    const next = `${VALUE}-2`
    await cli(next, 'secret', 'set', 'TOKEN_A', '--url', url)
    let seen: unknown
    for (let i = 0; i < 50 && seen !== next; i++) {
      seen = (await invoke(url, 'env-a', [0])).body.token
      if (seen !== next) await new Promise((r) => setTimeout(r, 100))
    }
    expect(seen).toBe(next)

    // Kept by the head: after a SIGKILL and a start on the same state, calls still read it.
    const exited = once(head.child, 'exit')
    head.child.kill('SIGKILL')
    await exited
    const again = await spawnHead(['--port', port, '--state', state, '--secret', SECRET])
    expect((await cli('', 'secret', 'list', '--url', url)).out).toMatch(/^TOKEN_A /m)
    expect((await invoke(url, 'env-a', [0])).body.token).toBe(next)
    expect((await cli('', 'secret', 'rm', 'TOKEN_A', '--url', url)).code).toBe(0)
    expect((await cli('', 'secret', 'rm', 'TOKEN_A', '--url', url)).code).not.toBe(0)

    for (const output of [head.output(), again.output(), node.output()]) {
      expect(output).not.toContain(VALUE)
    }
  }, 120_000)
})
