/**
 * Batching (`config.batch`): concurrent calls of a function arrive as one
 * call with the array of their arguments, and each caller gets its own item
 * of the array it returns, over HTTP and the SDK alike.
 */
import { describe, expect, it } from 'vitest'
import { TaskError } from '../sdk/index.ts'
import { local } from '../sdk/testing.ts'
import { ROOT, useClient, usePlatform } from './helpers.ts'

const ctx = usePlatform()
const mp = useClient(ctx)

async function invoke(name: string, args: unknown[]): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${ctx.url}/v1/functions/${name}/invoke?wait=30`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(args),
  })
  return { status: res.status, body: await res.json() }
}

describe('a function with config.batch', () => {
  it('gets concurrent HTTP calls as one batch, and answers each caller with its own item', async () => {
    const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => invoke('batch-double', [i])))
    answers.forEach(({ status, body }, i) => {
      expect(status).toBe(200)
      expect((body as { doubled: number }).doubled).toBe(2 * i)
    })
    // 16 calls at once, at most 8 a batch: they ran in batches, not one by one.
    const sizes = answers.map(({ body }) => (body as { batch: number }).batch)
    expect(Math.max(...sizes)).toBeGreaterThan(1)
    expect(Math.max(...sizes)).toBeLessThanOrEqual(8)
  })

  it('batches calls made with the SDK, and a lone call runs after maxWaitMs', async () => {
    const refs = Array.from({ length: 8 }, (_, i) => mp.remote('batch-double').remote(i))
    const values = (await mp.get(refs)) as Array<{ doubled: number; batch: number }>
    expect(values.map((v) => v.doubled)).toEqual([0, 2, 4, 6, 8, 10, 12, 14])
    expect(Math.max(...values.map((v) => v.batch))).toBeGreaterThan(1)
    expect(await mp.get(mp.remote('batch-double').remote(21))).toEqual({ doubled: 42, batch: 1 })
  })

  it("fails every call of a batch that threw with the function's error", async () => {
    const refs = [1, -1, 3].map((x) => mp.remote('batch-double').remote(x))
    const outcomes = await Promise.allSettled(refs.map((r) => mp.get(r)))
    const failed = outcomes.filter((o) => o.status === 'rejected')
    expect(failed.length).toBeGreaterThanOrEqual(1)
    for (const o of failed) {
      expect((o as PromiseRejectedResult).reason).toBeInstanceOf(TaskError)
      expect(((o as PromiseRejectedResult).reason as Error).message).toContain('no negative inputs')
    }
  })

  it('refuses a call with other than one argument, and a result of the wrong length, with clear errors', async () => {
    const two = await invoke('batch-double', [1, 2])
    expect(two.status).toBe(400)
    expect(JSON.stringify(two.body)).toContain('exactly one argument')
    const wrong = await invoke('batch-wrong', [5])
    expect(wrong.status).toBe(502)
    expect(JSON.stringify(wrong.body)).toContain('returned 0 items for 1 calls')
  })
})

describe('a batched function in local mode', () => {
  it('gets each call as a batch of one', async () => {
    const lm = local(`${ROOT}/test/fixtures/functions`)
    expect(await lm.call('batch-double', 4)).toEqual({ doubled: 8, batch: 1 })
  })
})
