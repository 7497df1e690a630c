/**
 * A cluster's life as processes come and go: a node started before its
 * head, a head killed and started again, probes without the secret, and the
 * secret kept out of everything printed or served.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { connect } from '../sdk/index.ts'
import {
  freePort,
  type SpawnedHead,
  spawnHead,
  spawnNode,
  stopSpawnedAfterAll,
  until,
} from './cluster-helpers.ts'

stopSpawnedAfterAll()
const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'magpie-lifecycle-'))
  dirs.push(dir)
  return dir
}

async function aliveNodes(url: string): Promise<Array<{ id: string; address: string; state: string }>> {
  const list = (await (await fetch(`${url}/v1/nodes`)).json()) as Array<{
    id: string
    address: string
    state: string
  }>
  return list.filter((n) => n.state === 'alive')
}

describe('starting in any order', () => {
  it('joins a node started 3 s before its head within a few seconds of the head coming up', async () => {
    const port = await freePort()
    const secretFile = join(tempDir(), 'secret')
    writeFileSync(secretFile, `${randomBytes(16).toString('hex')}\n`, { mode: 0o600 })
    const node = await spawnNode({
      head: `http://127.0.0.1:${port}`,
      args: ['--secret-file', secretFile, '--port', String(await freePort())],
      untilJoined: false,
    })
    const listening = /magpie node listening on (\S+),/.exec(node.output())?.[1] as string
    await new Promise((r) => setTimeout(r, 3000))
    // Alive and saying it waits, not joined, not ready.
    expect((await fetch(`${listening}/healthz`)).status).toBe(200)
    expect((await fetch(`${listening}/readyz`)).status).toBe(503)
    expect(node.output()).toMatch(/waiting for the head/)
    const head = await spawnHead(['--port', String(port), '--secret-file', secretFile])
    const upAt = Date.now()
    await node.joined
    const tookMs = Date.now() - upAt
    console.log(`the node joined ${tookMs} ms after its head came up`)
    expect(tookMs).toBeLessThan(3000)
    expect((await fetch(`${listening}/readyz`)).status).toBe(200)
    const mp = connect(head.url)
    expect(await mp.get(mp.remote('square').remote(7), { timeout: 30 })).toBe(49)
    await mp.close()
    await node.stop()
    await head.stop()
  }, 60_000)
})

describe('a head killed and started again', () => {
  it('takes its nodes back, and serves the objects made before', async () => {
    const state = tempDir()
    const port = await freePort()
    const secret = randomBytes(16).toString('hex')
    const headArgs = ['--port', String(port), '--secret', secret, '--state', state]
    let head: SpawnedHead = await spawnHead(headArgs)
    const nodes = await Promise.all([1, 2].map(() => spawnNode({ head: head.url, secret })))
    const ids = nodes.map((n) => n.id).sort()
    const mp = connect(head.url)
    const small = await mp.put({ kept: 'across a restart' })
    const bytes = new Uint8Array(300_000).map((_, i) => (i * 7) % 256)
    const big = await mp.put(bytes)
    const result = mp.remote('square').remote(12)
    expect(await mp.get(result, { timeout: 30 })).toBe(144)
    const held = (await mp.get(mp.remote('hold').remote({ deep: 'inside' }), { timeout: 30 })) as {
      ref: { id: string }
    }
    await mp.close()

    head.child.kill('SIGKILL')
    await new Promise((r) => head.child.once('exit', r))
    head = await spawnHead(headArgs)
    await until(async () => (await aliveNodes(head.url)).length === 2, 20_000)
    // The same nodes, under the ids their objects carry.
    expect((await aliveNodes(head.url)).map((n) => n.id).sort()).toEqual(ids)

    const again = connect(head.url)
    expect(await again.get(small, { timeout: 10 })).toEqual({ kept: 'across a restart' })
    const back = (await again.get(big, { timeout: 10 })) as Uint8Array
    expect(Buffer.compare(Buffer.from(back), Buffer.from(bytes))).toBe(0)
    expect(await again.get(result, { timeout: 10 })).toBe(144)
    expect(await again.get(held.ref as never, { timeout: 10 })).toEqual({ deep: 'inside' })
    // And the cluster works on.
    expect(await again.get(again.remote('square').remote(5), { timeout: 30 })).toBe(25)
    await again.close()
    await Promise.all(nodes.map((n) => n.stop()))
    await head.stop()
  }, 90_000)
})

describe('probes and the secret', () => {
  it('answers probes on every process without the secret, and nothing internal', async () => {
    const state = tempDir()
    const head = await spawnHead(['--port', '0', '--state', state])
    const joinFile = (await head.waitFor(/join command \(it holds the cluster secret\): (\S+)/))[1] as string
    expect(joinFile).toBe(join(state, 'join-command'))
    expect(statSync(joinFile).mode & 0o777).toBe(0o600)
    expect(statSync(join(state, 'cluster-secret')).mode & 0o777).toBe(0o600)
    const secret = readFileSync(join(state, 'cluster-secret'), 'utf8').trim()
    expect(readFileSync(joinFile, 'utf8')).toContain(
      `MAGPIE_CLUSTER_SECRET=${secret} magpie start --join ${head.url}`,
    )

    const node = await spawnNode({ head: head.url, args: ['--secret-file', join(state, 'cluster-secret')] })
    for (const base of [head.url, node.address]) {
      expect((await fetch(`${base}/healthz`)).status).toBe(200)
      expect((await fetch(`${base}/readyz`)).status).toBe(200)
    }
    for (const url of [
      `${node.address}/internal/objects/aaaaaaaaaaaaaaaa`,
      `${head.url}/internal/objects/aaaaaaaaaaaaaaaa`,
    ]) {
      const refused = await fetch(url)
      expect(refused.status).toBe(403)
      expect(await refused.text()).not.toContain(secret)
    }
    const wrong = await fetch(`${head.url}/internal/nodes`, {
      method: 'POST',
      headers: { 'x-magpie-secret': 'not the secret' },
      body: '{}',
    })
    expect(wrong.status).toBe(403)

    const mp = connect(head.url)
    expect(await mp.get(mp.remote('square').remote(3), { timeout: 30 })).toBe(9)
    await mp.close()
    const served = [
      await (await fetch(`${head.url}/v1/nodes`)).text(),
      await (await fetch(`${head.url}/metrics`)).text(),
      await (await fetch(`${head.url}/v1/objects/aaaaaaaaaaaaaaaa`)).text(),
    ]
    await node.stop()
    await head.stop()
    for (const text of [head.output(), node.output(), ...served]) expect(text).not.toContain(secret)
  }, 60_000)
})
