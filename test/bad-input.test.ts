/** Bad input gets the JSON error of the contract, and the server keeps serving. */
import { describe, expect, it } from 'vitest'
import { usePlatform } from './helpers.ts'

const ctx = usePlatform({ maxBodyBytes: 4096 })

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
