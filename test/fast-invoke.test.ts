/**
 * The hot route's own path (gateway/fast-invoke.ts): which requests it
 * takes, and that every answer it gives is the one Hono's path gives to the
 * same request. A chunked body always goes through Hono, so each request is
 * sent twice, once with its length (the fast path) and once chunked.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fastInvoke } from '../gateway/fast-invoke.ts'
import type { Backend } from '../node/backend.ts'
import { usePlatform } from './helpers.ts'

const TOKEN = 'fast-path-token-0123456789'
const ctx = usePlatform({ maxBodyBytes: 4096, token: TOKEN })

interface Answer {
  status: number
  type: string | null
  location: string | null
  retryAfter: string | null
  body: unknown
}

async function send(path: string, body: string, headers: Record<string, string>, chunked: boolean) {
  const init: RequestInit & { duplex?: 'half' } = { method: 'POST', headers }
  if (chunked) {
    init.body = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(body))
        controller.close()
      },
    })
    init.duplex = 'half'
  } else init.body = body
  const res = await fetch(ctx.url + path, init)
  const answer: Answer = {
    status: res.status,
    type: res.headers.get('content-type'),
    location: res.headers.get('location'),
    retryAfter: res.headers.get('retry-after'),
    body: await res.json(),
  }
  return answer
}

const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }

/** What may differ between two answers to one request: a new call's id. */
function withoutIds(answer: Answer): Answer {
  const body = answer.body as { id?: string }
  if (typeof body.id !== 'string') return answer
  expect(answer.location).toBe(`/v1/objects/${body.id}`)
  return { ...answer, location: '/v1/objects/ID', body: { ...body, id: 'ID' } }
}

describe('the invoke route’s own path', () => {
  it('answers each request as Hono’s path does', async () => {
    const cases: Array<[string, string, Record<string, string>]> = [
      ['a call', '[3]', auth],
      ['no arguments', '', auth],
      ['an envelope', '{"args": [2], "options": {"maxRetries": 1}}', auth],
      ['a byte order mark', '\ufeff[4]', auth],
      ['malformed JSON', '[1,', auth],
      ['neither array nor envelope', '{"x": 1}', auth],
      ['bad options', '{"args": [1], "options": {"maxRetries": -1}}', auth],
      ['an actor’s option', '{"args": [1], "options": {"maxRestarts": 1}}', auth],
      ['a bad $ref', '[{"$ref": "nope"}]', auth],
      ['a missing $ref', '[{"$ref": "aaaaaaaaaaaaaaaaaaaaaa"}]', auth],
      ['a bad id header', '[1]', { ...auth, 'x-magpie-object-id': 'short' }],
      ['a body over the limit', `["${'x'.repeat(5000)}"]`, auth],
      ['no token', '[1]', { 'content-type': 'application/json' }],
      ['a wrong token', '[1]', { ...auth, authorization: 'Bearer wrong' }],
    ]
    for (const [what, body, headers] of cases) {
      const fast = await send('/v1/functions/square/invoke', body, headers, false)
      const hono = await send('/v1/functions/square/invoke', body, headers, true)
      expect(withoutIds(fast), what).toEqual(withoutIds(hono))
    }
  })

  it('runs what it takes: the id given, a call sent again answered as the first', async () => {
    const id = 'fast-path-call-000001'
    const headers = { ...auth, 'x-magpie-object-id': id }
    const first = await send('/v1/functions/square/invoke', '[5]', headers, false)
    expect(first.status).toBe(202)
    expect(first.body).toMatchObject({ id })
    const again = await send('/v1/functions/square/invoke', '[5]', headers, false)
    expect(again).toMatchObject({ status: 202, body: { id } })
    const value = await fetch(`${ctx.url}/v1/objects/${id}?wait=10`, { headers: auth })
    expect(await value.json()).toBe(25)
  })
})

describe('which requests it takes', () => {
  let server: Server
  let url = ''
  const submitted: string[] = []
  const backend = {
    lookup: () => undefined,
    locate: async () => false,
    admit: () => {},
    submit: (spec: { fn: string }) => {
      submitted.push(spec.fn)
      return true
    },
  } as unknown as Backend
  const functions = { get: (name: string) => (name === 'square' ? { ref: 'square@3' } : undefined) }

  beforeAll(async () => {
    const fast = fastInvoke({
      backend,
      functions: functions as never,
      maxBodyBytes: 1000,
      tokens: undefined,
      observe: undefined,
    })
    server = createServer((req, res) => {
      if (fast(req, res)) return
      req.resume()
      res.writeHead(299).end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  const status = async (
    method: string,
    path: string,
    headers: Record<string, string> = {},
    body?: BodyInit,
  ) =>
    (await fetch(url + path, { method, headers, ...(body === undefined ? {} : { body, duplex: 'half' }) }))
      .status

  it('takes a JSON call of a deployed function, with its length and no query', async () => {
    expect(await status('POST', '/v1/functions/square/invoke', {}, '[1]')).toBe(202)
    expect(submitted).toEqual(['square@3'])
  })

  it('leaves everything else to the app, body unread', async () => {
    const bytes = { 'content-type': 'application/octet-stream' }
    const chunked = new ReadableStream({
      start(controller) {
        controller.enqueue(new Uint8Array([0x5b, 0x5d]))
        controller.close()
      },
    })
    expect(await status('GET', '/v1/functions/square/invoke')).toBe(299)
    expect(await status('POST', '/v1/functions/square/invoke?wait=1', {}, '[1]')).toBe(299)
    expect(await status('POST', '/v1/functions/other/invoke', {}, '[1]')).toBe(299)
    expect(await status('POST', '/v1/functions/sq%75are/invoke', {}, '[1]')).toBe(299)
    expect(await status('POST', '/v1/functions/square/invoke/', {}, '[1]')).toBe(299)
    expect(await status('POST', '/v1/functions/square/invoke', bytes, '[1]')).toBe(299)
    expect(await status('POST', '/v1/functions/square/invoke', {}, chunked)).toBe(299)
    expect(await status('POST', '/v1/actors/aaaaaaaaaaaaaaaa/methods/m', {}, '[1]')).toBe(299)
    expect(submitted).toEqual(['square@3'])
  })
})
