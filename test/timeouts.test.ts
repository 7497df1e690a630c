/** timeoutMs: a call past its limit fails with FUNCTION_TIMEOUT, and its worker is freed or replaced. */
import { describe, expect, it } from 'vitest'
import { FunctionTimeoutError } from '../sdk/index.ts'
import { useClient, usePlatform } from './helpers.ts'

const ctx = usePlatform({ cpus: 1 })
const mp = useClient(ctx)

describe('timeoutMs', () => {
  it('fails an async call that never settles, and frees its thread', async () => {
    const started = Date.now()
    const ref = mp.remote('hang').options({ timeoutMs: 200 }).remote()
    const err = await mp.get(ref, { timeout: 10 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(FunctionTimeoutError)
    expect((err as FunctionTimeoutError).code).toBe('FUNCTION_TIMEOUT')
    expect(Date.now() - started).toBeLessThan(5000)
    expect(await mp.get(mp.remote('square').remote(5), { timeout: 10 })).toBe(25)
  })

  it('answers 504 over HTTP', async () => {
    const response = await fetch(`${ctx.url}/v1/functions/hang/invoke?wait=10`, {
      method: 'POST',
      body: JSON.stringify({ args: [], options: { timeoutMs: 100 } }),
    })
    expect(response.status).toBe(504)
  })

  it('replaces a worker stuck in synchronous code', async () => {
    const ref = mp.remote('busy-wait').options({ timeoutMs: 200 }).remote(20_000)
    await expect(mp.get(ref, { timeout: 10 })).rejects.toBeInstanceOf(FunctionTimeoutError)
    const started = Date.now()
    expect(await mp.get(mp.remote('square').remote(6), { timeout: 15 })).toBe(36)
    expect(Date.now() - started).toBeLessThan(10_000)
  })
})
