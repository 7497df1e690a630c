/**
 * Objects lost with their node: made again by re-running the calls that
 * made them (lineage), through as many levels as were lost, while the read
 * waits; what cannot be made again fails one way everywhere, 410 OBJECT_LOST
 * naming the node.
 */
import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Head, startHead } from '../gateway/head.ts'
import { connect, ObjectLostError } from '../sdk/index.ts'
import { type SpawnedNode, spawnNode, stopSpawnedAfterAll, until } from './cluster-helpers.ts'
import { functionsWithFixtures } from './helpers.ts'

let head: Head
const nodes: SpawnedNode[] = []
const functionsDir = functionsWithFixtures()
stopSpawnedAfterAll()

beforeAll(async () => {
  head = await startHead({ functionsDir, port: 0, deadAfterMs: 2000 })
  const start = (args: string[]) => spawnNode({ head: head.url, secret: head.secret, args })
  nodes.push(
    ...(await Promise.all([
      start(['--resources', '{"slot":1}']),
      start(['--resources', '{"slot":1}']),
      start([]),
    ])),
  )
}, 60_000)

afterAll(async () => {
  await head?.close()
  rmSync(functionsDir, { recursive: true, force: true })
})

describe('objects lost with their node', () => {
  it('are made again through two levels of lineage, and the read waits; the rest is 410 naming the node', async () => {
    const mp = connect(head.url)
    const onSlot = { resources: { slot: 1 } }
    // A (200 KB, held where it was made), then B = echo(A) and D = echo(A): placed where A is.
    const a = mp.remote('make-bytes').options(onSlot).remote(200_000, 7)
    await mp.wait([a], { timeout: 30 })
    // One after the other: with the holder's only slot taken by B, the other slot node would steal D, as it should.
    const b = mp.remote('echo').options(onSlot).remote(a)
    await mp.wait([b], { timeout: 30 })
    const d = mp
      .remote('echo')
      .options({ ...onSlot, maxRetries: 0 })
      .remote(a)
    await mp.get([b, d], { timeout: 30 })
    const holder = (await mp.meta(b)).node as string
    expect((await mp.meta(a)).node).toBe(holder)
    expect((await mp.meta(d)).node).toBe(holder)
    // A put held by the same node: it cannot be made again.
    let put: Awaited<ReturnType<typeof mp.put>> | undefined
    for (let i = 0; i < 200 && !put; i++) {
      // Placement prefers the less loaded: the holder, busy a moment ago, is picked once its load is seen again.
      if (i > 0) await new Promise((r) => setTimeout(r, 50))
      const candidate = await mp.put(new Uint8Array(150_000).fill(i))
      if ((await mp.meta(candidate)).node === holder) put = candidate
    }
    expect(put).toBeDefined()

    const victim = nodes.find((n) => n.id === holder) as SpawnedNode
    victim.child.kill('SIGKILL')
    // Read at once: the head finds the holder gone and makes B (and A) again; the read waits.
    const back = (await mp.get(b, { timeout: 60 })) as Uint8Array
    expect(back.byteLength).toBe(200_000)
    expect(back.every((x) => x === 7)).toBe(true)
    expect((await mp.meta(b)).node).not.toBe(holder)
    expect((await mp.meta(b)).attempts).toBe(2)

    for (const lost of [d, put]) {
      const response = await fetch(`${head.url}/v1/objects/${lost?.id}`)
      expect(response.status).toBe(410)
      const { error } = (await response.json()) as { error: { code: string; message: string } }
      expect(error.code).toBe('OBJECT_LOST')
      expect(error.message).toContain(holder)
      expect(await mp.meta(lost as never)).toMatchObject({ status: 'failed', error: { code: 'OBJECT_LOST' } })
    }
    await expect(mp.get(d, { timeout: 10 })).rejects.toBeInstanceOf(ObjectLostError)
    // As an argument, too.
    const using = await fetch(`${head.url}/v1/functions/echo/invoke?wait=20`, {
      method: 'POST',
      body: JSON.stringify([{ $ref: put?.id }]),
    })
    expect(using.status).toBe(410)
    await until(async () => {
      const list = (await (await fetch(`${head.url}/v1/nodes`)).json()) as Array<{
        id: string
        state: string
      }>
      return list.find((n) => n.id === holder)?.state === 'dead'
    })
    await mp.close()
  }, 90_000)
})
