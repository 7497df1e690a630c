/**
 * A head SIGKILLed and started again on its state (a folder, or Redis):
 * what it owned is served again, its calls in flight finish, its nodes
 * rejoin by themselves with the kept secret, and what a node that did not
 * come back held is made again by lineage or fails as OBJECT_LOST.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import {
  freePort,
  type SpawnedHead,
  type SpawnedNode,
  spawnHead,
  spawnNode,
  stopSpawnedAfterAll,
  until,
} from './cluster-helpers.ts'
import { tempDirs } from './temp-dirs.ts'

stopSpawnedAfterAll()
const servers: ChildProcess[] = []
afterAll(async () => {
  for (const server of servers) {
    if (server.exitCode !== null || server.signalCode !== null) continue
    const exited = once(server, 'exit')
    server.kill('SIGKILL')
    await exited
  }
})

const tempDir = tempDirs('magpie-restart-')

/** Debian's redis-server on a free port, with nothing saved to disk; stopped after the tests. */
async function startRedis(): Promise<string> {
  const port = await freePort()
  const server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  servers.push(server)
  server.on('error', () => {})
  let output = ''
  server.stdout?.on('data', (chunk: Buffer) => {
    output += chunk
  })
  await until(() => {
    if (server.exitCode !== null || server.signalCode !== null)
      throw new Error(`redis-server (from Debian's redis-server package) did not start:\n${output}`)
    return /Ready to accept connections/.test(output)
  }, 10_000)
  return `redis://127.0.0.1:${port}`
}

/** The cluster secret from the join command a head wrote (its path is in the head's output). */
async function secretOf(head: SpawnedHead): Promise<string> {
  const [, file] = await head.waitFor(/join command \(it holds the cluster secret\): (\S+)/)
  return /MAGPIE_CLUSTER_SECRET=(\S+)/.exec(readFileSync(file as string, 'utf8'))?.[1] as string
}

async function json(url: string, init?: RequestInit): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, init)
  return { status: res.status, body: await res.json() }
}

async function invoke(url: string, fn: string, args: unknown[], wait?: number): Promise<string> {
  const res = await fetch(`${url}/v1/functions/${fn}/invoke${wait ? `?wait=${wait}` : ''}`, {
    method: 'POST',
    body: JSON.stringify({ args }),
  })
  expect(res.status).toBeLessThan(300)
  const id = res.headers.get('x-magpie-object-id') ?? ((await res.json()) as { id: string }).id
  return id
}

async function put(url: string, body: string | Uint8Array<ArrayBuffer>, type: string): Promise<string> {
  const res = await json(`${url}/v1/objects`, { method: 'POST', headers: { 'content-type': type }, body })
  expect(res.status).toBe(201)
  return (res.body as { id: string }).id
}

async function holderOf(url: string, id: string): Promise<string> {
  return ((await json(`${url}/v1/objects/${id}/meta`)).body as { node: string }).node
}

async function kill(head: SpawnedHead): Promise<void> {
  const exited = once(head.child, 'exit')
  head.child.kill('SIGKILL')
  await exited
}

const BIG_TEXT = 'x'.repeat(150_000) // over the head's inline limit: held on a node
const BIG_BYTES = new Uint8Array(new ArrayBuffer(300_000)).map((_, i) => (i * 7) % 256)

/**
 * Makes one of each thing a head owns, kills the head, starts another with
 * `again` on the same port, and checks that each is served again.
 */
async function restartKeepsEverything(first: string[], again: string[]): Promise<void> {
  const port = String(await freePort())
  const head = await spawnHead(['--port', port, ...first])
  const node = await spawnNode({ head: head.url, secret: await secretOf(head) })
  const url = head.url
  const small = await invoke(url, 'square', [7], 20)
  const bigResult = await invoke(url, 'echo', [BIG_TEXT], 20)
  const putJson = await put(url, '{"kept":true}', 'application/json')
  const putBytes = await put(url, BIG_BYTES, 'application/octet-stream')
  const inFlight = await invoke(url, 'sleep', [3000])
  expect(await holderOf(url, bigResult)).toBe(node.id)

  await kill(head)
  const second = await spawnHead(['--port', port, ...again])
  await second.waitFor(/serving again 4 objects and 1 calls in flight/)
  // The node joins again by itself: the restarted head kept the secret.
  await until(async () => {
    const nodes = (await json(`${url}/v1/nodes`)).body as Array<{ id: string; state: string }>
    return nodes.some((n) => n.id === node.id && n.state === 'alive')
  }, 20_000)
  expect((await json(`${url}/v1/objects/${inFlight}?wait=20`)).body).toBe(3000)
  expect((await json(`${url}/v1/objects/${small}`)).body).toBe(49)
  expect((await json(`${url}/v1/objects/${bigResult}?wait=10`)).body).toBe(BIG_TEXT)
  expect((await json(`${url}/v1/objects/${putJson}`)).body).toEqual({ kept: true })
  const bytes = await fetch(`${url}/v1/objects/${putBytes}?wait=10`)
  expect(new Uint8Array(await bytes.arrayBuffer())).toEqual(BIG_BYTES)
  const functions = (await json(`${url}/v1/functions`)).body as Array<{ name: string }>
  expect(functions.map((f) => f.name)).toContain('square')
  // And it runs new calls on that node.
  expect(
    (await json(`${url}/v1/functions/square/invoke?wait=20`, { method: 'POST', body: '{"args":[3]}' })).body,
  ).toBe(9)
}

describe('a head SIGKILLed and started again', () => {
  it('on the same --state folder serves results, puts, functions and calls in flight again', async () => {
    const state = tempDir()
    await restartKeepsEverything(['--state', state], ['--state', state])
  }, 90_000)

  it('on --state redis:// does the same from another folder, with no functions folder of its own', async () => {
    const redis = await startRedis()
    const empty = tempDir()
    await restartKeepsEverything(['--state', redis], ['--state', redis, '--functions', empty])
  }, 90_000)

  it('makes again by lineage a result held on a node that did not come back; a put there is lost', async () => {
    const state = tempDir()
    const port = String(await freePort())
    const head = await spawnHead(['--port', port, '--state', state])
    const secret = await secretOf(head)
    const nodes: SpawnedNode[] = [
      await spawnNode({ head: head.url, secret }),
      await spawnNode({ head: head.url, secret }),
    ]
    const url = head.url
    const result = await invoke(url, 'echo', [BIG_TEXT], 20)
    const holder = await holderOf(url, result)
    // A put held by the same node (placement picks at random: put until one lands there).
    let lostPut: string | undefined
    for (let i = 0; i < 200 && !lostPut; i++) {
      // Placement prefers the less loaded: the holder, busy a moment ago, is picked once its load is seen again.
      if (i > 0) await new Promise((r) => setTimeout(r, 50))
      const id = await put(url, BIG_BYTES, 'application/octet-stream')
      if ((await holderOf(url, id)) === holder) lostPut = id
    }
    expect(lostPut).toBeDefined()

    await kill(head)
    const dead = nodes.find((n) => n.id === holder) as SpawnedNode
    const exited = once(dead.child, 'exit')
    dead.child.kill('SIGKILL')
    await exited
    await spawnHead(['--port', port, '--state', state])
    expect((await json(`${url}/v1/objects/${result}?wait=30`)).body).toBe(BIG_TEXT)
    const rebuilt = (await json(`${url}/v1/objects/${result}/meta`)).body as {
      node: string
      attempts: number
    }
    expect(rebuilt.node).not.toBe(holder)
    expect(rebuilt.attempts).toBe(2)
    const lost = await json(`${url}/v1/objects/${lostPut}`)
    expect(lost.status).toBe(410)
    expect(lost.body).toMatchObject({ error: { code: 'OBJECT_LOST' } })
    expect(JSON.stringify(lost.body)).toContain(holder)
  }, 120_000)
})
