/** The batch routes the SDK uses to keep the gateway's load low: POST /v1/calls and POST /v1/objects/stream. */
import { describe, expect, it } from 'vitest'
import { FunctionNotFoundError } from '../sdk/index.ts'
import { useClient, usePlatform } from './helpers.ts'

const ctx = usePlatform()
const mp = useClient(ctx)

function post(path: string, body: unknown) {
  return fetch(ctx.url + path, { method: 'POST', body: JSON.stringify(body) })
}

async function streamLines(ids: string[], timeout?: number) {
  const response = await post('/v1/objects/stream', timeout === undefined ? { ids } : { ids, timeout })
  expect(response.headers.get('content-type')).toContain('application/x-ndjson')
  return (await response.text())
    .trim()
    .split('\n')
    .filter(Boolean)
    .map(
      (line) => JSON.parse(line) as { id: string; status: string; value?: unknown; error?: { code: string } },
    )
}

describe('POST /v1/calls', () => {
  it('submits many calls at once, a later one taking an earlier one by $ref', async () => {
    const response = await post('/v1/calls', [
      { function: 'square', args: [3], id: 'batch-call-00000001' },
      { function: 'add', args: [{ $ref: 'batch-call-00000001' }, 1], id: 'batch-call-00000002' },
      { function: 'sleep', args: [1], options: { maxRetries: 0 } },
    ])
    expect(response.status).toBe(202)
    const calls = (await response.json()) as Array<{ id: string; status: string }>
    expect(calls).toHaveLength(3)
    expect(calls[0]?.id).toBe('batch-call-00000001')
    const last = await fetch(`${ctx.url}/v1/objects/batch-call-00000002?wait=10`)
    expect(await last.json()).toBe(10)
  })

  it('runs nothing when one call is bad', async () => {
    const response = await post('/v1/calls', [
      { function: 'square', args: [3], id: 'batch-call-00000003' },
      { function: 'no-such-function', args: [] },
    ])
    expect(response.status).toBe(404)
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('FUNCTION_NOT_FOUND')
    expect((await fetch(`${ctx.url}/v1/objects/batch-call-00000003`)).status).toBe(404)
  })

  it('rejects malformed batches with 400', async () => {
    for (const body of [{}, [{ function: 'square' }], [{ function: 'square', args: [], bogus: 1 }]]) {
      expect((await post('/v1/calls', body)).status).toBe(400)
    }
    const twice = [
      { function: 'square', args: [1], id: 'batch-call-00000004' },
      { function: 'square', args: [2], id: 'batch-call-00000004' },
    ]
    expect((await post('/v1/calls', twice)).status).toBe(400)
  })
})

describe('POST /v1/objects/stream', () => {
  it('streams objects in the order they settle, failures included', async () => {
    const slow = mp.remote('sleep').remote(300)
    const fast = mp.remote('sleep').remote(1)
    const failed = mp.remote('fail').remote('boom')
    await mp.wait([fast, failed], { numReturns: 2, timeout: 10 })
    const lines = await streamLines([slow.id, fast.id, failed.id])
    expect(lines.map((l) => l.id).slice(-1)).toEqual([slow.id])
    expect(lines.find((l) => l.id === fast.id)).toMatchObject({ status: 'ready', value: 1 })
    expect(lines.find((l) => l.id === failed.id)).toMatchObject({
      status: 'failed',
      error: { code: 'FUNCTION_ERROR' },
    })
  })

  it('ends at the timeout with what has settled', async () => {
    const slow = mp.remote('sleep').remote(5000)
    const fast = mp.remote('square').remote(2)
    await mp.get(fast)
    const started = Date.now()
    const lines = await streamLines([slow.id, fast.id], 0.3)
    expect(lines).toEqual([{ id: fast.id, status: 'ready', value: 4 }])
    expect(Date.now() - started).toBeLessThan(3000)
  })

  it('404s unknown ids and 400s duplicates', async () => {
    expect((await post('/v1/objects/stream', { ids: ['no-such-object-0000'] })).status).toBe(404)
    const ref = await mp.put(1)
    expect((await post('/v1/objects/stream', { ids: [ref.id, ref.id] })).status).toBe(400)
  })
})

describe('SDK batching', () => {
  it('gives each call of a refused batch its own answer', async () => {
    const good = mp.remote('square').remote(5)
    const bad = mp.remote('no-such-function').remote(1)
    await expect(mp.get(bad)).rejects.toBeInstanceOf(FunctionNotFoundError)
    expect(await mp.get(good)).toBe(25)
  })

  it('passes bytes among other arguments by storing them first', async () => {
    expect(await mp.get(mp.remote('byte-sum').remote(new Uint8Array([1, 2, 3]), 10))).toBe(16)
  })

  it('gets a thousand results of one batch in input order', async () => {
    const square = mp.remote<(x: number) => number>('square')
    const refs = Array.from({ length: 1000 }, (_, i) => square.remote(i))
    const values = await mp.get(refs)
    expect(values).toEqual(Array.from({ length: 1000 }, (_, i) => i * i))
  })
})
