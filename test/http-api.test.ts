/** The HTTP API as curl sends it, against a real platform on a free port. */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { tempFile, usePlatform } from './helpers.ts'

const ctx = usePlatform()

/** As `curl -d` sends: form content type unless told otherwise. */
function post(path: string, body?: string | Uint8Array<ArrayBuffer>, headers: Record<string, string> = {}) {
  return fetch(ctx.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    ...(body === undefined ? {} : { body }),
  })
}

async function invoke(name: string, args: unknown, query = '', headers: Record<string, string> = {}) {
  return post(`/v1/functions/${name}/invoke${query}`, JSON.stringify(args), headers)
}

async function errorOf(response: Response) {
  expect(response.headers.get('content-type')).toContain('application/json')
  return ((await response.json()) as { error: { code: string; message: string } }).error
}

describe('invoke', () => {
  it('answers 202 with the id and a Location at once', async () => {
    const response = await invoke('square', [42])
    expect(response.status).toBe(202)
    const body = (await response.json()) as { id: string; status: string }
    expect(body.status).toBe('pending')
    expect(response.headers.get('location')).toBe(`/v1/objects/${body.id}`)
    const value = await fetch(`${ctx.url}/v1/objects/${body.id}?wait=10`)
    expect(value.status).toBe(200)
    expect(await value.json()).toBe(1764)
  })

  it('returns the value itself with ?wait, and its id in a header', async () => {
    const response = await invoke('square', [42], '?wait=10')
    expect(response.status).toBe(200)
    expect(response.headers.get('x-magpie-object-id')).toMatch(/^[A-Za-z0-9_-]{16,64}$/)
    expect(await response.text()).toBe('1764')
  })

  it('accepts the {args, options} envelope', async () => {
    const response = await invoke('add', { args: [2, 3], options: { maxRetries: 0 } }, '?wait=10')
    expect(await response.json()).toBe(5)
  })

  it('answers 202 when ?wait runs out first', async () => {
    const response = await invoke('sleep', [2000], '?wait=0.2')
    expect(response.status).toBe(202)
    expect(((await response.json()) as { status: string }).status).toMatch(/pending|running/)
  })

  it("answers with the function's error as a 502 FUNCTION_ERROR", async () => {
    const response = await invoke('fail', ['boom'], '?wait=10')
    expect(response.status).toBe(502)
    const error = (await errorOf(response)) as Record<string, unknown>
    expect(error).toMatchObject({ code: 'FUNCTION_ERROR', name: 'CustomError', message: 'boom', attempts: 1 })
    expect(error.stack).toContain('CustomError: boom')
  })

  it('runs a call once however often its X-Magpie-Object-Id is sent', async () => {
    const file = tempFile('runs.txt')
    const id = 'idempotent-call-0001'
    const first = await invoke('append-line', [file, 'ran'], '', { 'x-magpie-object-id': id })
    expect(first.status).toBe(202)
    expect(((await first.json()) as { id: string }).id).toBe(id)
    const again = await invoke('append-line', [file, 'ran'], '?wait=10', { 'x-magpie-object-id': id })
    expect(again.status).toBe(200)
    expect(again.headers.get('x-magpie-object-id')).toBe(id)
    expect(await again.json()).toBe('ran')
    const third = await invoke('append-line', [file, 'ran'], '', { 'x-magpie-object-id': id })
    expect(((await third.json()) as { id: string }).id).toBe(id)
    expect(readFileSync(file, 'utf8')).toBe('ran\n')
  })

  it('resolves top-level $ref arguments and keeps nested ones as references', async () => {
    const put = await post('/v1/objects', '[1,2,3]')
    const { id } = (await put.json()) as { id: string }
    const top = await invoke('echo', [{ $ref: id }], '?wait=10')
    expect(await top.json()).toEqual([1, 2, 3])
    const nested = await invoke('echo', [{ inner: { $ref: id } }], '?wait=10')
    expect(await nested.json()).toEqual({ inner: { $ref: id } })
  })

  it("fails a call whose $ref argument failed, with that argument's code and cause", async () => {
    const failed = (await (await invoke('fail', ['first'])).json()) as { id: string }
    const response = await invoke('echo', [{ $ref: failed.id }], '?wait=10')
    expect(response.status).toBe(502)
    const error = (await errorOf(response)) as unknown as {
      code: string
      cause: { id: string; code: string }
    }
    expect(error.code).toBe('FUNCTION_ERROR')
    expect(error.cause).toMatchObject({ id: failed.id, code: 'FUNCTION_ERROR' })
  })

  it('runs a 100-call dependency chain', async () => {
    let id = ((await (await invoke('add', [0, 1])).json()) as { id: string }).id
    for (let i = 1; i < 100; i++)
      id = ((await (await invoke('add', [{ $ref: id }, 1])).json()) as { id: string }).id
    const last = await fetch(`${ctx.url}/v1/objects/${id}?wait=30`)
    expect(await last.json()).toBe(100)
  })

  it('round-trips raw bytes unchanged', async () => {
    const bytes = new Uint8Array(70_000).map((_, i) => (i * 7) % 256)
    const response = await post('/v1/functions/echo/invoke?wait=10', bytes, {
      'content-type': 'application/octet-stream',
    })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/octet-stream')
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes)
  })
})

describe('objects', () => {
  it('stores JSON and bytes, and reads them back', async () => {
    const json = await post('/v1/objects', '{"a":[1,"two",null]}', { 'content-type': 'application/json' })
    expect(json.status).toBe(201)
    const { id } = (await json.json()) as { id: string }
    expect(await (await fetch(`${ctx.url}/v1/objects/${id}`)).json()).toEqual({ a: [1, 'two', null] })

    const bytes = new Uint8Array([0, 1, 2, 253, 254, 255])
    const raw = await post('/v1/objects', bytes, { 'content-type': 'application/octet-stream' })
    const rawId = ((await raw.json()) as { id: string }).id
    const back = await fetch(`${ctx.url}/v1/objects/${rawId}`)
    expect(back.headers.get('content-type')).toBe('application/octet-stream')
    expect(new Uint8Array(await back.arrayBuffer())).toEqual(bytes)
  })

  it('long-polls an unfinished object with ?wait', async () => {
    const { id } = (await (await invoke('sleep', [300])).json()) as { id: string }
    const early = await fetch(`${ctx.url}/v1/objects/${id}`)
    expect(early.status).toBe(202)
    expect(((await early.json()) as { status: string }).status).toMatch(/pending|running/)
    const started = Date.now()
    const late = await fetch(`${ctx.url}/v1/objects/${id}?wait=10`)
    expect(await late.json()).toBe(300)
    expect(Date.now() - started).toBeLessThan(5000)
  })

  it('answers a finished object at once, also with ?wait=0', async () => {
    const { id } = (await (await post('/v1/objects', '7')).json()) as { id: string }
    const response = await fetch(`${ctx.url}/v1/objects/${id}?wait=0`)
    expect(response.status).toBe(200)
    expect(await response.json()).toBe(7)
  })

  it('describes an object in /meta', async () => {
    const response = await invoke('square', [3], '?wait=10')
    const id = response.headers.get('x-magpie-object-id') as string
    const meta = (await (await fetch(`${ctx.url}/v1/objects/${id}/meta`)).json()) as Record<string, unknown>
    expect(meta).toMatchObject({
      id,
      status: 'ready',
      size: 1,
      contentType: 'application/json',
      function: 'square',
    })
    expect(meta.attempts).toBe(1)
    expect(typeof meta.createdAt).toBe('string')
    expect(typeof meta.node).toBe('string')
  })

  it('frees an object with DELETE, after which its id answers 404', async () => {
    const { id } = (await (await post('/v1/objects', '"bye"')).json()) as { id: string }
    const gone = await fetch(`${ctx.url}/v1/objects/${id}`, { method: 'DELETE' })
    expect(gone.status).toBe(204)
    const after = await fetch(`${ctx.url}/v1/objects/${id}`)
    expect(after.status).toBe(404)
    expect((await errorOf(after)).code).toBe('OBJECT_NOT_FOUND')
  })
})

describe('wait', () => {
  async function ids(...calls: Array<[string, unknown[]]>) {
    return Promise.all(
      calls.map(async ([name, args]) => ((await (await invoke(name, args)).json()) as { id: string }).id),
    )
  }

  it('returns at most numReturns ready ids, both lists in input order', async () => {
    const [slow, fast1, fast2] = await ids(['sleep', [3000]], ['sleep', [1]], ['sleep', [2]])
    const response = await post(
      '/v1/wait',
      JSON.stringify({ ids: [slow, fast1, fast2], numReturns: 2, timeout: 10 }),
    )
    const body = (await response.json()) as { ready: string[]; pending: string[] }
    expect(body).toEqual({ ready: [fast1, fast2], pending: [slow] })
  })

  it('returns what is ready when the timeout passes', async () => {
    const [slow, fast] = await ids(['sleep', [3000]], ['sleep', [1]])
    const body = (await (
      await post('/v1/wait', JSON.stringify({ ids: [slow, fast], numReturns: 2, timeout: 0.5 }))
    ).json()) as { ready: string[]; pending: string[] }
    expect(body).toEqual({ ready: [fast], pending: [slow] })
  })

  it('counts failed objects as ready', async () => {
    const [failed] = await ids(['fail', ['x']])
    const body = (await (await post('/v1/wait', JSON.stringify({ ids: [failed], timeout: 10 }))).json()) as {
      ready: string[]
    }
    expect(body.ready).toEqual([failed])
  })
})

describe('functions', () => {
  it('lists the deployed functions', async () => {
    const list = (await (await fetch(`${ctx.url}/v1/functions`)).json()) as Array<Record<string, unknown>>
    const names = list.map((f) => f.name)
    for (const name of ['square', 'add', 'sleep', 'fail', 'echo', 'fib', 'prepare-source', 'seed-pipeline']) {
      expect(names).toContain(name)
    }
    const sleep = list.find((f) => f.name === 'sleep')
    expect(sleep).toMatchObject({ kind: 'function', config: { concurrency: 100 } })
    expect(sleep?.version).toMatch(/^[0-9a-f]{12}$/)
  })

  it('describes one function, and 404s an unknown one', async () => {
    expect(await (await fetch(`${ctx.url}/v1/functions/square`)).json()).toMatchObject({ name: 'square' })
    const missing = await fetch(`${ctx.url}/v1/functions/nope`)
    expect(missing.status).toBe(404)
    expect((await errorOf(missing)).code).toBe('FUNCTION_NOT_FOUND')
  })
})

describe('health', () => {
  it('answers /healthz and /readyz', async () => {
    expect((await fetch(`${ctx.url}/healthz`)).status).toBe(200)
    expect((await fetch(`${ctx.url}/readyz`)).status).toBe(200)
  })

  it('lists the node with its load in /v1/nodes', async () => {
    const nodes = (await (await fetch(`${ctx.url}/v1/nodes`)).json()) as Array<Record<string, unknown>>
    const cluster = Number(process.env.MAGPIE_TEST_CLUSTER ?? 0)
    expect(nodes).toHaveLength(cluster || 1)
    for (const node of nodes) {
      expect(node).toMatchObject({
        state: 'alive',
        cpus: cluster ? 1 : 2,
        steals: { in: expect.any(Number) },
      })
    }
  })
})
