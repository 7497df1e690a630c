/** Nested tasks on one CPU: a task waiting in `get` gives its slot back, so deep nesting cannot deadlock. */
import { describe, expect, it } from 'vitest'
import { tempFile, useClient, usePlatform } from './helpers.ts'

const ctx = usePlatform({ cpus: 1 })
const mp = useClient(ctx)

describe('nested tasks with --cpus 1', () => {
  it('computes fib(15) as a tree of nested tasks', async () => {
    expect(await mp.get(mp.remote('fib').remote(15), { timeout: 60 })).toBe(610)
  })

  it('completes 1,000 concurrent parent → child → grandchild chains', async () => {
    const chain = mp.remote<(depth: number) => number>('chain')
    const refs = Array.from({ length: 1000 }, () => chain.remote(2))
    const values = await mp.get(refs, { timeout: 120 })
    expect(values).toHaveLength(1000)
    expect(values.every((v) => v === 2)).toBe(true)
  })

  it('runs the seed pipeline as nested tasks with the right answer', async () => {
    const report = (await mp.get(mp.remote('seed-pipeline').remote({ scale: 50 }), { timeout: 120 })) as {
      answer_sha: string
      count: number
    }
    expect(report.answer_sha).toBe('72823fb8cecb1d49')
    expect(report.count).toBe(1911)
  })
})

describe('worker crashes', () => {
  it('retries a call whose worker died, on a fresh worker', async () => {
    const marker = tempFile('crashed')
    expect(await mp.get(mp.remote('crash-once').remote(marker), { timeout: 30 })).toBe('survived')
    expect(await mp.get(mp.remote('square').remote(6))).toBe(36)
  })

  it('fails with WORKER_CRASHED once the retries are spent', async () => {
    const marker = tempFile('crashed')
    const ref = mp.remote('crash-once').options({ maxRetries: 0 }).remote(marker)
    await expect(mp.get(ref, { timeout: 30 })).rejects.toMatchObject({ code: 'WORKER_CRASHED' })
  })
})
