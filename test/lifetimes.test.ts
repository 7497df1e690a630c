/** How long objects live inside a node: while handles, values or pending tasks need them, and no longer. */
import { describe, expect, it } from 'vitest'
import { ObjectRef } from '../sdk/index.ts'
import { useClient, usePlatform } from './helpers.ts'

const ctx = usePlatform({ cpus: 1 })
const mp = useClient(ctx)

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function objects(): Promise<{ count: number; bytes: number; freed: number }> {
  const nodes = (await (await fetch(`${ctx.url}/v1/nodes`)).json()) as Array<{
    objects: { count: number; bytes: number; freed: number }
  }>
  return nodes[0]?.objects ?? { count: -1, bytes: -1, freed: -1 }
}

describe('object lifetimes', () => {
  it('keeps an object while a function holds its handle across calls', async () => {
    const keep = mp.remote('keep-ref')
    expect(await mp.get(keep.remote('store', { kept: [1, 2, 3] }))).toBe('stored')
    await sleep(600) // the worker goes idle and collects its garbage
    expect(await mp.get(keep.remote('read'))).toEqual({ kept: [1, 2, 3] })
  })

  it('keeps the objects a result refers to after the call that made them let go of them', async () => {
    const refs = (await mp.get(mp.remote('make-refs').remote(20))) as ObjectRef[]
    expect(refs).toHaveLength(20)
    expect(refs[0]).toBeInstanceOf(ObjectRef)
    await sleep(600)
    const values = await mp.get(refs)
    expect(values).toEqual(Array.from({ length: 20 }, (_, i) => ({ i, text: `object ${i}` })))
  })

  it('frees what a nested run made once it is over: the store keeps little beyond the result', async () => {
    const before = await objects()
    const report = (await mp.get(mp.remote('seed-pipeline').remote({ scale: 1000 }))) as { answer: unknown[] }
    expect(report.answer.length).toBeGreaterThan(0)
    let after = await objects()
    for (let tries = 0; tries < 50 && after.count > before.count + 2; tries++) {
      await sleep(100)
      after = await objects()
    }
    expect(after.count).toBeLessThanOrEqual(before.count + 2)
    expect(after.freed - before.freed).toBeGreaterThan(500)
    expect(after.bytes - before.bytes).toBeLessThan(64 * 1024)
  })
})
