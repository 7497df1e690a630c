/** Bad input gets the JSON error of the contract, and the server keeps serving. */
import { describe, expect, it } from 'vitest'
import { useClient, usePlatform } from './helpers.ts'

const ctx = usePlatform({ maxBodyBytes: 4096 })
const mp = useClient(ctx)

async function expectError(response: Response, status: number, code: string) {
  expect(response.status).toBe(status)
  expect(response.headers.get('content-type')).toContain('application/json')
  const body = (await response.json()) as { error: { code: string; message: string } }
  expect(body.error.code).toBe(code)
  expect(body.error.message.length).toBeGreaterThan(0)
}

function post(path: string, body: string | Uint8Array<ArrayBuffer>, headers: Record<string, string> = {}) {
  return fetch(ctx.url + path, { method: 'POST', body, headers })
}

describe('bad input', () => {
  it('rejects malformed JSON with 400', async () => {
    await expectError(await post('/v1/functions/square/invoke', '[1,'), 400, 'BAD_REQUEST')
    await expectError(await post('/v1/objects', '{nope'), 400, 'BAD_REQUEST')
  })

  it('rejects arguments that are neither an array nor an envelope', async () => {
    await expectError(await post('/v1/functions/square/invoke', '42'), 400, 'BAD_REQUEST')
    await expectError(await post('/v1/functions/square/invoke', '{"x": 1}'), 400, 'BAD_REQUEST')
    await expectError(await post('/v1/functions/square/invoke', '{"args": 3}'), 400, 'BAD_REQUEST')
  })

  it('rejects bad options with a message naming the field', async () => {
    const response = await post('/v1/functions/square/invoke', '{"args": [1], "options": {"maxRetries": -1}}')
    expect(response.status).toBe(400)
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain('maxRetries')
    const noTtl = await post('/v1/functions/square/invoke', '{"args": [1], "options": {"ttlS": 0}}')
    expect(noTtl.status).toBe(400)
    expect(((await noTtl.json()) as { error: { message: string } }).error.message).toContain('ttlS')
  })

  it('refuses an actor’s options on a call of a function, rather than drop them', async () => {
    for (const option of ['"maxRestarts": 1', '"maxTaskRetries": 2', '"lifetime": "detached"']) {
      const res = await post('/v1/functions/square/invoke', `{"args": [1], "options": {${option}}}`)
      expect(res.status).toBe(400)
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/option of actors/)
    }
    const batch = await post(
      '/v1/calls',
      '[{"function": "square", "args": [2], "options": {"maxRestarts": 1}}]',
    )
    expect(batch.status).toBe(400)
    expect(((await batch.json()) as { error: { message: string } }).error.message).toMatch(
      /calls\[0\]\.options\.maxRestarts is an option of actors/,
    )
    expect(() => mp.remote('square').options({ maxRestarts: 1 })).toThrow(/option of actors/)
    expect(() => mp.remote('square', { maxConcurrency: 2 })).toThrow(/option of actors/)
  })

  it('rejects JSON nested deeper than the limit with 400, and takes what is within it', async () => {
    const deep = `[${'['.repeat(600)}1${']'.repeat(600)}]`
    await expectError(await post('/v1/functions/echo/invoke', deep), 400, 'BAD_REQUEST')
    const fine = `[${'['.repeat(100)}1${']'.repeat(100)}]`
    const echoed = await post('/v1/functions/echo/invoke?wait=10', fine)
    expect(echoed.status).toBe(200)
    // Brackets inside strings are text, not nesting.
    const inString = await post('/v1/functions/echo/invoke?wait=10', JSON.stringify(['['.repeat(1000)]))
    expect(inString.status).toBe(200)
  })

  it('rejects a timeoutMs over a day with 400', async () => {
    const response = await post(
      '/v1/functions/square/invoke',
      '{"args": [1], "options": {"timeoutMs": 86400001}}',
    )
    expect(response.status).toBe(400)
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain('timeoutMs')
  })

  it('treats a resource named like an Object method as a name', async () => {
    const response = await post(
      '/v1/functions/square/invoke?wait=10',
      '{"args": [3], "options": {"resources": {"toString": 0}}}',
    )
    expect(response.status).toBe(200)
    expect(await response.json()).toBe(9)
  })

  it('answers an empty stream request at once', async () => {
    const started = Date.now()
    const response = await post('/v1/objects/stream', '{"ids": []}')
    expect(response.status).toBe(200)
    expect(await response.text()).toBe('')
    expect(Date.now() - started).toBeLessThan(5000)
  })

  it('answers HEAD on a byte object with its headers and no body', async () => {
    const put = await post('/v1/objects', new Uint8Array([1, 2, 3]), {
      'content-type': 'application/octet-stream',
    })
    const { id } = (await put.json()) as { id: string }
    const head = await fetch(`${ctx.url}/v1/objects/${id}`, { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.headers.get('content-type')).toBe('application/octet-stream')
    expect(await head.text()).toBe('')
    const get = await fetch(`${ctx.url}/v1/objects/${id}`)
    expect([...new Uint8Array(await get.arrayBuffer())]).toEqual([1, 2, 3])
  })

  it('404s an unknown function when it is invoked, not later', async () => {
    await expectError(await post('/v1/functions/nope/invoke', '[1]'), 404, 'FUNCTION_NOT_FOUND')
  })

  it('404s an unknown $ref argument when the call is made', async () => {
    const response = await post('/v1/functions/echo/invoke', '[{"$ref": "no-such-object-0000"}]')
    await expectError(response, 404, 'OBJECT_NOT_FOUND')
  })

  it('400s a malformed object id, 404s an unknown one', async () => {
    await expectError(await fetch(`${ctx.url}/v1/objects/short`), 400, 'BAD_REQUEST')
    await expectError(await fetch(`${ctx.url}/v1/objects/bad!chars*in*this*id`), 400, 'BAD_REQUEST')
    await expectError(await fetch(`${ctx.url}/v1/objects/no-such-object-0000`), 404, 'OBJECT_NOT_FOUND')
    await expectError(await fetch(`${ctx.url}/v1/objects/no-such-object-0000/meta`), 404, 'OBJECT_NOT_FOUND')
    await expectError(
      await fetch(`${ctx.url}/v1/objects/no-such-object-0000`, { method: 'DELETE' }),
      404,
      'OBJECT_NOT_FOUND',
    )
    const header = { 'x-magpie-object-id': 'x' }
    await expectError(await post('/v1/functions/square/invoke', '[1]', header), 400, 'BAD_REQUEST')
  })

  it('400s a bad ?wait', async () => {
    await expectError(await post('/v1/functions/square/invoke?wait=61', '[1]'), 400, 'BAD_REQUEST')
    await expectError(await post('/v1/functions/square/invoke?wait=soon', '[1]'), 400, 'BAD_REQUEST')
  })

  it('413s a body over the limit', async () => {
    const big = new Uint8Array(10_000)
    await expectError(
      await post('/v1/objects', big, { 'content-type': 'application/octet-stream' }),
      413,
      'PAYLOAD_TOO_LARGE',
    )
    await expectError(
      await post('/v1/functions/echo/invoke', `["${'x'.repeat(5000)}"]`),
      413,
      'PAYLOAD_TOO_LARGE',
    )
  })

  it('400s duplicate ids, too many returns and a bad timeout in wait; 404s unknown ids', async () => {
    const { id } = (await (await post('/v1/objects', '1')).json()) as { id: string }
    await expectError(await post('/v1/wait', JSON.stringify({ ids: [id, id] })), 400, 'BAD_REQUEST')
    await expectError(
      await post('/v1/wait', JSON.stringify({ ids: [id], numReturns: 2 })),
      400,
      'BAD_REQUEST',
    )
    await expectError(await post('/v1/wait', JSON.stringify({ ids: [id], timeout: -1 })), 400, 'BAD_REQUEST')
    await expectError(await post('/v1/wait', JSON.stringify({ ids: 'x' })), 400, 'BAD_REQUEST')
    await expectError(
      await post('/v1/wait', JSON.stringify({ ids: ['no-such-object-0000'] })),
      404,
      'OBJECT_NOT_FOUND',
    )
  })

  it('answers unknown routes with a JSON 404', async () => {
    await expectError(await fetch(`${ctx.url}/v2/anything`), 404, 'NOT_FOUND')
  })

  it('keeps serving after all of that', async () => {
    const response = await post('/v1/functions/square/invoke?wait=10', '[9]')
    expect(await response.json()).toBe(81)
  })
})
