/**
 * memoryMb, of a function (config) or of one call: the call runs in a thread
 * with that heap, so that past it the call fails with WORKER_CRASHED while
 * the node, and calls without it, go on as before.
 */
import { describe, expect, it } from 'vitest'
import { WorkerCrashedError } from '../sdk/index.ts'
import { useClient, usePlatform } from './helpers.ts'

// No --worker-memory: the node's own threads have V8's default heap.
const ctx = usePlatform({ cpus: 2 })
const mp = useClient(ctx)

describe('memoryMb', () => {
  it('bounds the heap of the calls of a function whose config sets it', async () => {
    const small = mp.remote<(mb: number) => number>('small-hog')
    expect(await mp.get(small.remote(8), { timeout: 30 })).toBe(8)
    const err = await mp.get(small.remote(200), { timeout: 60 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(WorkerCrashedError)
    expect((err as WorkerCrashedError).message).toMatch(/memory/i)
    // The same 200 MiB fits a thread of the default size.
    expect(await mp.get(mp.remote('hog').remote(200), { timeout: 60 })).toBe(200)
  }, 120_000)

  it('bounds one call that sets it as an option, and leaves the node and other calls alone', async () => {
    const hog = mp.remote<(mb: number) => number>('hog')
    const bounded = hog.options({ memoryMb: 48, maxRetries: 0 })
    await expect(mp.get(bounded.remote(200), { timeout: 60 })).rejects.toBeInstanceOf(WorkerCrashedError)
    expect(await mp.get(bounded.remote(4), { timeout: 30 })).toBe(4)
    expect(await mp.get([hog.remote(100), mp.remote('square').remote(7)], { timeout: 60 })).toEqual([100, 49])
  }, 120_000)

  it('lets a sized call that waits for the calls it made give its CPU slot to them', async () => {
    const fanOut = mp.remote('fan-out').options({ memoryMb: 64 })
    expect(await mp.get(fanOut.remote(40, 'busy', 5), { timeout: 60 })).toMatchObject({ calls: 40 })
  }, 60_000)

  it('refuses a memoryMb under 16 MiB with 400', async () => {
    const res = await fetch(`${ctx.url}/v1/functions/hog/invoke`, {
      method: 'POST',
      body: JSON.stringify({ args: [1], options: { memoryMb: 8 } }),
    })
    expect(res.status).toBe(400)
    expect(await res.text()).toMatch(/memoryMb/)
  })
})
