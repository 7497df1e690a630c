/** A head with three node processes on loopback: placement, objects across nodes, capacity, node death and leave. */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Head, startHead } from '../gateway/head.ts'
import { connect, type MagpieError } from '../sdk/index.ts'
import { ROOT } from './helpers.ts'

let head: Head
const nodes: ChildProcess[] = []

function startNode(extra: string[] = []): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [join(ROOT, 'bin/magpie.mjs'), 'start', '--join', head.url, '--cpus', '1', ...extra],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, MAGPIE_CLUSTER_SECRET: head.secret },
    },
  )
  nodes.push(child)
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk
      if (out.includes('joined')) resolve(child)
    })
    child.once('exit', (code) => reject(new Error(`node exited with ${code}: ${out}`)))
  })
}

async function nodeList() {
  return (await (await fetch(`${head.url}/v1/nodes`)).json()) as Array<{
    id: string
    state: string
    resources: Record<string, number>
    tasks: Record<string, { finished: number }>
  }>
}

async function until(check: () => Promise<boolean>, ms = 15_000) {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 100))
  }
}

beforeAll(async () => {
  head = await startHead({ functionsDir: join(ROOT, 'functions'), port: 0, deadAfterMs: 2500 })
  await Promise.all([startNode(), startNode(), startNode(['--resources', '{"gpu":1}'])])
}, 60_000)

afterAll(async () => {
  for (const child of nodes) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  await head?.close()
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

  it('gives a node that joins while work runs a share of that work', async () => {
    const mp = connect(head.url)
    const before = new Set((await nodeList()).map((n) => n.id))
    // 60 calls of 200 ms: seconds of work for the three nodes, still queued when the fourth is up.
    const run = mp.remote('fan-out').remote(60, 'busy', 200)
    await new Promise((r) => setTimeout(r, 300))
    await startNode()
    expect(await mp.get(run, { timeout: 60 })).toMatchObject({ calls: 60 })
    await until(async () => {
      const late = (await nodeList()).find((n) => !before.has(n.id))
      return (late?.tasks.busy?.finished ?? 0) > 0
    })
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
    extra.kill('SIGKILL')
    expect(await mp.get(refs, { timeout: 30 })).toEqual(refs.map(() => 400))
    await until(async () => (await nodeList()).some((n) => n.state === 'dead'))
    await mp.close()
  })

  it('lets a node leave cleanly: it hands back its queued calls and nothing is lost', async () => {
    const leaving = await startNode()
    const mp = connect(head.url)
    const refs = Array.from({ length: 20 }, () => mp.remote('sleep').options({ concurrency: 1 }).remote(150))
    await mp.wait(refs, { numReturns: 0 })
    const exited = once(leaving, 'exit')
    leaving.kill('SIGTERM')
    await exited
    expect(await mp.get(refs, { timeout: 30 })).toEqual(refs.map(() => 150))
    await mp.close()
  })
})
