/** Retries: which errors are retried, after what backoff, and the platform's longest call time. */
import { describe, expect, it } from 'vitest'
import { FunctionTimeoutError, TaskError } from '../sdk/index.ts'
import { useClient, usePlatform } from './helpers.ts'

const ctx = usePlatform({ cpus: 1, maxCallTimeMs: 400 })
const mp = useClient(ctx)
const flaky = () => mp.remote<(key: string, times: number, name: string) => number>('flaky')

describe('retryExceptions', () => {
  it('retries only the errors it names', async () => {
    const named = flaky().options({ retryExceptions: ['Transient'], maxRetries: 3, retryDelayMs: 0 })
    expect(await mp.get(named.remote('a', 2, 'Transient'), { timeout: 10 })).toBe(3)
    const err = await mp.get(named.remote('b', 2, 'Fatal'), { timeout: 10 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TaskError)
    expect((err as TaskError).remote.name).toBe('Fatal')
    expect((err as TaskError).attempts).toBe(1)
  })

  it('takes true for every error, and false or nothing for none', async () => {
    const all = flaky().options({ retryExceptions: true, retryDelayMs: 0 })
    expect(await mp.get(all.remote('c', 1, 'Anything'), { timeout: 10 })).toBe(2)
    await expect(mp.get(flaky().remote('d', 1, 'Anything'), { timeout: 10 })).rejects.toBeInstanceOf(
      TaskError,
    )
  })

  it('rejects anything else with 400', async () => {
    const response = await fetch(`${ctx.url}/v1/functions/flaky/invoke`, {
      method: 'POST',
      body: JSON.stringify({ args: ['e', 0, 'x'], options: { retryExceptions: 'yes' } }),
    })
    expect(response.status).toBe(400)
  })
})

describe('retryDelayMs', () => {
  it('backs off between retries, doubling', async () => {
    const started = Date.now()
    const slow = flaky().options({ retryExceptions: true, maxRetries: 2, retryDelayMs: 300 })
    expect(await mp.get(slow.remote('f', 2, 'Transient'), { timeout: 10 })).toBe(3)
    // 150 to 300 ms before the first retry, 300 to 600 before the second.
    expect(Date.now() - started).toBeGreaterThanOrEqual(450)
  })
})

describe('--max-call-time', () => {
  it('stops a call with no time limit of its own at the platform limit', async () => {
    const err = await mp.get(mp.remote('hang').remote(), { timeout: 10 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(FunctionTimeoutError)
    expect((err as FunctionTimeoutError).message).toContain('400 ms')
  })

  it('keeps a shorter time limit of a call', async () => {
    const err = await mp
      .get(mp.remote('hang').options({ timeoutMs: 100 }).remote(), { timeout: 10 })
      .catch((e: unknown) => e)
    expect((err as FunctionTimeoutError).message).toContain('100 ms')
  })
})
