/**
 * Backpressure on calls made inside functions: never refused, but the thread
 * that makes them waits while its node is full, so that a fan-out far past
 * the bound holds the node near it, and finishes (no deadlock).
 */
import { describe, expect, it } from 'vitest'
import { useClient, usePlatform } from './helpers.ts'

const MAX_QUEUED = 40
const ctx = usePlatform({ cpus: 2, admission: { maxQueued: MAX_QUEUED } })
const mp = useClient(ctx)

/** The most calls unfinished on the node while `work` runs, polled. */
async function peakWhile<T>(work: Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = 0
  let done = false
  const result = work.finally(() => {
    done = true
  })
  while (!done) {
    const [node] = (await (await fetch(`${ctx.url}/v1/nodes`)).json()) as Array<{
      queued: number
      running: number
    }>
    peak = Math.max(peak, (node?.queued ?? 0) + (node?.running ?? 0))
    await new Promise((r) => setTimeout(r, 5))
  }
  return { result: await result, peak }
}

describe('nested calls past the bound', () => {
  it('make their thread wait for room, so that the node stays near its bound, and all finish', async () => {
    const { result, peak } = await peakWhile(
      mp.get(mp.remote('fan-out').remote(3000, 'busy', 1), { timeout: 120 }),
    )
    expect(result).toMatchObject({ calls: 3000 })
    // Unbounded, the 3,000 calls would all wait at once; a batch in flight may pass the bound.
    expect(peak).toBeGreaterThan(MAX_QUEUED / 2)
    expect(peak).toBeLessThan(MAX_QUEUED + 100)
  }, 150_000)

  it('never deadlock, even when every thread makes calls past the bound', async () => {
    const refs = [1, 2, 3, 4].map(() => mp.remote('fan-out').remote(500, 'fan-out', 3, 'noop'))
    expect(await mp.get(refs, { timeout: 120 })).toHaveLength(4)
  }, 150_000)
})
