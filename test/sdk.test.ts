/** The SDK against a real platform: refs, get, wait, put, options, asCompleted and errors. */
import { describe, expect, it } from 'vitest'
import {
  BadRequestError,
  FunctionNotFoundError,
  GetTimeoutError,
  MagpieError,
  ObjectNotFoundError,
  ObjectRef,
  TaskError,
} from '../sdk/index.ts'
import { useClient, usePlatform } from './helpers.ts'

const ctx = usePlatform()
const mp = useClient(ctx)

const square = () => mp.remote<(x: number) => number>('square')
const sleep = () => mp.remote<(ms: number) => number>('sleep')

describe('remote', () => {
  it('returns an ObjectRef at once, its id chosen by the client', () => {
    const ref = square().remote(4)
    expect(ref).toBeInstanceOf(ObjectRef)
    expect(ref.id).toMatch(/^[A-Za-z0-9_-]{16,64}$/)
    expect(JSON.stringify(ref)).toBe(JSON.stringify({ $ref: ref.id }))
  })

  it('passes per-call options with .options()', async () => {
    const ref = square().options({ maxRetries: 0, timeoutMs: 5000 }).remote(5)
    expect(await mp.get(ref)).toBe(25)
  })

  it('rejects bad options at the gateway with BadRequestError', async () => {
    const ref = square()
      .options({ numCpus: -1 } as never)
      .remote(1)
    await expect(mp.get(ref)).rejects.toBeInstanceOf(BadRequestError)
  })
})

describe('get', () => {
  it('returns one value', async () => {
    expect(await mp.get(square().remote(42))).toBe(1764)
  })

  it('returns a list in input order, whatever order they finish in', async () => {
    const refs = [sleep().remote(300), sleep().remote(1), sleep().remote(150)]
    expect(await mp.get(refs)).toEqual([300, 1, 150])
  })

  it('returns a list holding the same ref twice', async () => {
    const ref = square().remote(3)
    expect(await mp.get([ref, ref])).toEqual([9, 9])
  })

  it('throws GetTimeoutError when the timeout passes', async () => {
    const ref = sleep().remote(3000)
    const started = Date.now()
    const err = await mp.get(ref, { timeout: 0.3 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(GetTimeoutError)
    expect(err).toBeInstanceOf(MagpieError)
    expect(Date.now() - started).toBeLessThan(2500)
    await expect(mp.get([ref, square().remote(1)], { timeout: 0.3 })).rejects.toBeInstanceOf(GetTimeoutError)
  })

  it('feeds one call into another by ref, without the client fetching it', async () => {
    const add = mp.remote<(a: number, b: number) => number>('add')
    expect(await mp.get(add.remote(square().remote(3), square().remote(4)))).toBe(25)
  })

  it('gives nested refs back as ObjectRefs, top-level refs as values', async () => {
    const echo = mp.remote('echo')
    const inner = await mp.put({ deep: true })
    expect(await mp.get(echo.remote(inner))).toEqual({ deep: true })
    const out = (await mp.get(echo.remote({ inner }))) as { inner: ObjectRef }
    expect(out.inner).toBeInstanceOf(ObjectRef)
    expect(out.inner.id).toBe(inner.id)
    expect(await mp.get(out.inner)).toEqual({ deep: true })
  })

  it('runs a 100-call dependency chain', async () => {
    const add = mp.remote<(a: number, b: number) => number>('add')
    let ref = add.remote(0, 1)
    for (let i = 1; i < 100; i++) ref = add.remote(ref, 1)
    expect(await mp.get(ref)).toBe(100)
  })

  it('draws a progress bar when asked', async () => {
    const refs = [1, 2, 3].map((x) => square().remote(x))
    expect(await mp.get(refs, { progress: true })).toEqual([1, 4, 9])
  })
})

describe('errors', () => {
  it('rejects with TaskError carrying the remote name, message and stack', async () => {
    const err = (await mp.get(mp.remote('fail').remote('boom')).catch((e: unknown) => e)) as TaskError
    expect(err).toBeInstanceOf(TaskError)
    expect(err).toBeInstanceOf(MagpieError)
    expect(err.code).toBe('FUNCTION_ERROR')
    expect(err.remote.name).toBe('CustomError')
    expect(err.remote.message).toBe('boom')
    expect(err.remote.stack).toContain('CustomError: boom')
    expect(err.message).toContain('boom')
  })

  it('fails a call whose argument failed, naming the failed object as cause', async () => {
    const failed = mp.remote('fail').remote('first')
    const err = (await mp.get(mp.remote('echo').remote(failed)).catch((e: unknown) => e)) as TaskError
    expect(err).toBeInstanceOf(TaskError)
    expect(err.cause).toMatchObject({ id: failed.id, code: 'FUNCTION_ERROR' })
  })

  it('rejects an unknown function with FunctionNotFoundError', async () => {
    const ref = mp.remote('no-such-function').remote(1)
    const err = await mp.get(ref).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(FunctionNotFoundError)
    expect((err as MagpieError).code).toBe('FUNCTION_NOT_FOUND')
  })

  it('rejects an unknown object with ObjectNotFoundError', async () => {
    await expect(mp.get(new ObjectRef('not-a-real-object-id'))).rejects.toBeInstanceOf(ObjectNotFoundError)
  })
})

describe('wait', () => {
  it('returns numReturns ready refs, both lists in input order', async () => {
    const slow = sleep().remote(3000)
    const fast = [sleep().remote(1), sleep().remote(5)]
    const { ready, pending } = await mp.wait([slow, ...fast], { numReturns: 2, timeout: 10 })
    expect(ready.map((r) => r.id)).toEqual(fast.map((r) => r.id))
    expect(pending.map((r) => r.id)).toEqual([slow.id])
  })

  it('defaults to one ready ref', async () => {
    const refs = [sleep().remote(1), sleep().remote(2), sleep().remote(3)]
    await mp.get(refs)
    const { ready, pending } = await mp.wait(refs)
    expect(ready).toHaveLength(1)
    expect(pending).toHaveLength(2)
  })

  it('returns early when the timeout passes', async () => {
    const refs = [sleep().remote(3000), sleep().remote(3000)]
    const started = Date.now()
    const { ready, pending } = await mp.wait(refs, { numReturns: 2, timeout: 0.2 })
    expect(ready).toEqual([])
    expect(pending).toHaveLength(2)
    expect(Date.now() - started).toBeLessThan(2500)
  })

  it('rejects the same ref twice, and more returns than refs', async () => {
    const ref = square().remote(2)
    await expect(mp.wait([ref, ref])).rejects.toBeInstanceOf(BadRequestError)
    await expect(mp.wait([ref], { numReturns: 2 })).rejects.toBeInstanceOf(BadRequestError)
  })
})

describe('put', () => {
  it('stores JSON and bytes', async () => {
    const json = await mp.put({ a: 1 })
    expect(await mp.get(json)).toEqual({ a: 1 })
    const bytes = new Uint8Array([9, 8, 7, 0, 255])
    const ref = await mp.put(bytes)
    const back = await mp.get(mp.remote('echo').remote(ref))
    expect(back).toBeInstanceOf(Uint8Array)
    expect(back).toEqual(bytes)
  })

  it('frees objects, after which they are not found', async () => {
    const ref = await mp.put('short-lived')
    await mp.free(ref)
    await expect(mp.get(ref)).rejects.toBeInstanceOf(ObjectNotFoundError)
  })
})

describe('asCompleted', () => {
  it('yields each ref with its value as it finishes', async () => {
    const refs = [sleep().remote(400), sleep().remote(1), sleep().remote(200)]
    const order: number[] = []
    for await (const [ref, value] of mp.asCompleted(refs)) {
      expect(refs.some((r) => r.id === ref.id)).toBe(true)
      order.push(value)
    }
    expect(order).toEqual([1, 200, 400])
  })
})
