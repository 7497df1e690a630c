/** --worker-memory: a call past a worker's heap limit fails with WORKER_CRASHED; the node lives on. */
import { describe, expect, it } from 'vitest'
import { WorkerCrashedError } from '../sdk/index.ts'
import { useClient, usePlatform } from './helpers.ts'

const ctx = usePlatform({ cpus: 1, workerMemoryMb: 64 })
const mp = useClient(ctx)

describe('a worker memory limit', () => {
  it('fails a call that needs more, and runs the next', async () => {
    const hog = mp.remote<(mb: number) => number>('hog')
    expect(await mp.get(hog.remote(8), { timeout: 30 })).toBe(8)
    const err = await mp
      .get(hog.options({ maxRetries: 0 }).remote(512), { timeout: 60 })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(WorkerCrashedError)
    expect((err as WorkerCrashedError).message).toMatch(/memory/i)
    expect(await mp.get(mp.remote('square').remote(8), { timeout: 30 })).toBe(64)
  }, 90_000)
})
