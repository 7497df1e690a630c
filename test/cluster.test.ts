/** A head with three node processes on loopback: placement, objects across nodes, capacity, node death and leave. */
import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Head, startHead } from '../gateway/head.ts'
import { connect, type MagpieError } from '../sdk/index.ts'
import { spawnNode, stopSpawnedAfterAll, until } from './cluster-helpers.ts'
import { functionsWithFixtures } from './helpers.ts'

type Stamp = { pid: number; startedAt: number }
let head: Head
const functionsDir = functionsWithFixtures()
stopSpawnedAfterAll()

const startNode = (args: string[] = []) => spawnNode({ head: head.url, secret: head.secret, args })

async function nodeList() {
  return (await (await fetch(`${head.url}/v1/nodes`)).json()) as Array<{
    id: string
    state: string
    resources: Record<string, number>
    tasks: Record<string, { finished: number }>
  }>
}

beforeAll(async () => {
  head = await startHead({ functionsDir, port: 0, deadAfterMs: 2500 })
  await Promise.all([startNode(), startNode(), startNode(['--resources', '{"gpu":1}'])])
}, 60_000)

afterAll(async () => {
  await head?.close()
  rmSync(functionsDir, { recursive: true, force: true })
})

describe('a three-node cluster', () => {
  it('lists its nodes as alive, with their resources', async () => {
    const list = await nodeList()
    expect(list).toHaveLength(3)
    expect(list.every((n) => n.state === 'alive')).toBe(true)
    expect(list.filter((n) => n.resources.gpu === 1)).toHaveLength(1)
  })

  it('spreads calls over the nodes and passes results between them by ref', async () => {
    const mp = connect(head.url)
    const add = mp.remote<(a: number, b: number) => number>('add')
    let ref = add.remote(0, 1)
    for (let i = 1; i < 60; i++) ref = add.remote(ref, 1)
    expect(await mp.get(ref, { timeout: 30 })).toBe(60)
    await until(async () => (await nodeList()).every((n) => (n.tasks.add?.finished ?? 0) > 0))
    await mp.close()
  })

  it('moves bytes between nodes unchanged', async () => {
    const mp = connect(head.url)
    const bytes = new Uint8Array(500_000).map((_, i) => i % 256)
    const stored = await mp.put(bytes)
    const refs = Array.from({ length: 6 }, () => mp.remote('echo').remote(stored))
    // Compared as buffers: a deep equality of half a million elements would stall the head in this process.
    for (const back of await mp.get(refs, { timeout: 30 })) {
      expect(Buffer.compare(Buffer.from(back as Uint8Array), Buffer.from(bytes))).toBe(0)
    }
    await mp.close()
  })

  it('reads objects made inside functions, on whichever node made them, through the head', async () => {
    const mp = connect(head.url)
    const held = (await mp.get(mp.remote('hold').remote({ deep: [1, 2, 3] }), { timeout: 30 })) as {
      ref: { id: string }
    }
    expect(held.ref.id).toMatch(/^n[A-Za-z0-9]{6}_/)
    expect(await mp.get(held.ref as never, { timeout: 30 })).toEqual({ deep: [1, 2, 3] })
    const meta = await mp.meta(held.ref as never)
    expect(meta).toMatchObject({ status: 'ready', contentType: 'application/json' })
    expect(await mp.get(mp.remote('echo').remote(held.ref), { timeout: 30 })).toEqual({ deep: [1, 2, 3] })
    await mp.close()
  })

  it('lets a function get a ref it was handed, wherever in the cluster the object is', async () => {
    const mp = connect(head.url)
    const gpuNode = (await nodeList()).find((n) => n.resources.gpu)?.id as string
    // A ref made on another node than the one that reads it.
    let held: { ref: { id: string } } | undefined
    for (let tries = 0; tries < 20 && (!held || held.ref.id.startsWith(`${gpuNode}_`)); tries++) {
      held = (await mp.get(mp.remote('hold').remote({ made: 'elsewhere' }), { timeout: 30 })) as {
        ref: { id: string }
      }
    }
    expect(held?.ref.id.startsWith(`${gpuNode}_`)).toBe(false)
    const onGpu = mp.remote('deref').options({ resources: { gpu: 1 } })
    expect(await mp.get(onGpu.remote(held), { timeout: 30 })).toEqual({ made: 'elsewhere' })
    // A ref to an object a client put: the head owns it.
    const put = await mp.put({ put: 'by a client' })
    expect(await mp.get(onGpu.remote({ ref: put }), { timeout: 30 })).toEqual({ put: 'by a client' })
    await mp.close()
  })

  it('frees an object made inside a function through the head, on its node', async () => {
    const mp = connect(head.url)
    const held = (await mp.get(mp.remote('hold').remote('short-lived'), { timeout: 30 })) as {
      ref: { id: string }
    }
    const url = `${head.url}/v1/objects/${held.ref.id}`
    expect((await fetch(url, { method: 'DELETE' })).status).toBe(204)
    expect((await fetch(url)).status).toBe(404)
    expect((await fetch(url, { method: 'DELETE' })).status).toBe(404)
    await mp.close()
  })

  it('runs a call that needs a resource only on the node that has it, and refuses one nobody has', async () => {
    const ok = await fetch(`${head.url}/v1/functions/square/invoke?wait=10`, {
      method: 'POST',
      body: JSON.stringify({ args: [4], options: { resources: { gpu: 1 } } }),
    })
    expect(await ok.json()).toBe(16)
    const none = await fetch(`${head.url}/v1/functions/square/invoke`, {
      method: 'POST',
      body: JSON.stringify({ args: [4], options: { resources: { tpu: 1 } } }),
    })
    expect(none.status).toBe(503)
    expect(((await none.json()) as { error: MagpieError }).error.code).toBe('NO_CAPACITY')
  })

  it('gives a node that joins while calls are queued a share of them within a second', async () => {
    const mp = connect(head.url)
    // 300 calls of 50 ms on three one-CPU nodes: about 5 s of work, most of it queued when the node is up.
    const refs = Array.from({ length: 300 }, () => mp.remote<(ms: number) => Stamp>('stamp').remote(50))
    await mp.wait(refs, { numReturns: 0 })
    await new Promise((r) => setTimeout(r, 300))
    const late = await startNode()
    const joinedAt = Date.now()
    const results = await mp.get(refs, { timeout: 60 })
    const mine = results.filter((r) => r.pid === late.child.pid)
    expect(mine.length).toBeGreaterThan(0)
    const tookMs = Math.min(...mine.map((r) => r.startedAt)) - joinedAt
    console.log(`the late node started its first of ${mine.length} calls ${tookMs} ms after it joined`)
    expect(tookMs).toBeLessThan(1000)
    await mp.close()
  })

  it('places the calls of a killed node again, and marks it dead', async () => {
    const alive = async () => (await nodeList()).filter((n) => n.state === 'alive').length
    const before = await alive()
    const extra = await startNode()
    await until(async () => (await alive()) === before + 1)
    const mp = connect(head.url)
    const refs = Array.from({ length: 12 }, () => mp.remote('sleep').options({ concurrency: 1 }).remote(400))
    await mp.wait(refs, { numReturns: 0 })
    extra.child.kill('SIGKILL')
    expect(await mp.get(refs, { timeout: 30 })).toEqual(refs.map(() => 400))
    await until(async () => (await nodeList()).some((n) => n.state === 'dead'))
    await mp.close()
  })

  it('lets a node leave cleanly: it hands back its queued calls and nothing is lost', async () => {
    const leaving = await startNode()
    const mp = connect(head.url)
    const refs = Array.from({ length: 20 }, () => mp.remote('sleep').options({ concurrency: 1 }).remote(150))
    await mp.wait(refs, { numReturns: 0 })
    await leaving.stop()
    expect(await mp.get(refs, { timeout: 30 })).toEqual(refs.map(() => 150))
    await mp.close()
  })
})
