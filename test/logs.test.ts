/** Per-call logs: GET /v1/objects/{id}/logs, following, children, retention, the SDK and the CLI. */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { LogsGoneError, ObjectNotFoundError, ObjectRef } from '../sdk/index.ts'
import { ROOT, useClient, usePlatform } from './helpers.ts'

const ctx = usePlatform({ cpus: 2 })
const mp = useClient(ctx)

const logsOf = (id: string, query = '') => fetch(`${ctx.url}/v1/objects/${id}/logs${query}`)

describe('call logs', () => {
  it('answers what a call wrote to stdout and stderr, as text', async () => {
    const ref = mp.remote('talker').remote(3, 0, 'hello')
    expect(await mp.get(ref, { timeout: 20 })).toBe(3)
    const res = await logsOf(ref.id)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('text/plain')
    expect(await res.text()).toBe('hello 0\nhello 1\nhello 2\nhello done\n')
    const stamped = await (await logsOf(ref.id, '?timestamps=1')).text()
    expect(stamped.split('\n')[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z hello 0$/)
  })

  it('streams the lines of a running call with follow=1, and ends when it settles', async () => {
    const ref = mp.remote('talker').remote(6, 250, 'slow')
    await mp.wait([ref], { numReturns: 0 })
    const res = await logsOf(ref.id, '?follow=1')
    expect(res.status).toBe(200)
    const reader = (res.body as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    let text = ''
    let firstAt = 0
    const started = Date.now()
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      text += decoder.decode(read.value, { stream: true })
      if (firstAt === 0 && text.includes('slow 0')) firstAt = Date.now()
    }
    // The first line came while the call still ran (6 lines 250 ms apart), and the stream ended with it.
    expect(firstAt - started).toBeLessThan(1000)
    expect(text).toBe('slow 0\nslow 1\nslow 2\nslow 3\nslow 4\nslow 5\nslow done\n')
    expect(Date.now() - started).toBeGreaterThan(1200)
  }, 30_000)

  it('follows a call made inside a function', async () => {
    const { id } = (await mp.get(mp.remote('spawn-talker').remote(), { timeout: 20 })) as { id: string }
    const res = await logsOf(id, '?follow=1')
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('inner 0\ninner 1\ninner 2\ninner 3\ninner done\n')
  }, 30_000)

  it('adds the lines of the calls a call made with children=1, each prefixed with its id', async () => {
    const ref = mp.remote('talk-tree').remote(2)
    const ids = (await mp.get(ref, { timeout: 20 })) as string[]
    const own = await (await logsOf(ref.id)).text()
    expect(own).toBe('tree start\ntree end\n')
    const all = (await (await logsOf(ref.id, '?children=1')).text()).trim().split('\n')
    expect(all[0]).toBe(`[${ref.id}] tree start`)
    expect(all.at(-1)).toBe(`[${ref.id}] tree end`)
    for (const [i, id] of ids.entries()) {
      expect(all).toContain(`[${id}] child${i} 0`)
      expect(all).toContain(`[${id}] child${i} done`)
    }
    expect(all).toHaveLength(2 + 3 * ids.length)
  }, 30_000)

  it('reads them with the SDK (mp.logs) and the CLI (magpie logs)', async () => {
    const ref = mp.remote('talker').remote(2, 0, 'sdk')
    const lines: string[] = []
    for await (const line of mp.logs(ref, { follow: true })) lines.push(line)
    expect(lines).toEqual(['sdk 0', 'sdk 1', 'sdk done'])
    const { stdout } = await promisify(execFile)(process.execPath, [
      join(ROOT, 'bin/magpie.mjs'),
      'logs',
      ref.id,
      '--url',
      ctx.url,
    ])
    expect(stdout).toBe('sdk 0\nsdk 1\nsdk done\n')
  }, 30_000)

  it('answers 404 for an unknown call and 400 for a bad flag', async () => {
    const unknown = await logsOf('AAAAAAAAAAAAAAAAAAAAA')
    expect(unknown.status).toBe(404)
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('OBJECT_NOT_FOUND')
    await expect(
      (async () => {
        for await (const _ of mp.logs(new ObjectRef('AAAAAAAAAAAAAAAAAAAAA'))) break
      })(),
    ).rejects.toBeInstanceOf(ObjectNotFoundError)
    const ref = mp.remote('talker').remote(1, 0, 'x')
    await mp.get(ref)
    expect((await logsOf(ref.id, '?follow=maybe')).status).toBe(400)
  })
})

describe('call logs past retention', () => {
  const small = usePlatform({ cpus: 1, logRetention: { bytes: 4096, ageMs: 3_600_000 } })
  const client = useClient(small)

  it('answers 410 LOGS_GONE for lines past the node’s retention, never nothing', async () => {
    const first = client.remote('chatty').remote(2, 'old')
    await client.get(first, { timeout: 20 })
    expect((await fetch(`${small.url}/v1/objects/${first.id}/logs`)).status).toBe(200)
    // 8 KiB more, from later calls: the first call's lines go.
    for (let i = 0; i < 4; i++)
      await client.get(client.remote('chatty').remote(2, `new${i}`), { timeout: 20 })
    const res = await fetch(`${small.url}/v1/objects/${first.id}/logs`)
    expect(res.status).toBe(410)
    const body = (await res.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe('LOGS_GONE')
    expect(body.error.message).toMatch(/retention/)
    await expect(
      (async () => {
        for await (const _ of client.logs(first)) break
      })(),
    ).rejects.toBeInstanceOf(LogsGoneError)
  }, 30_000)
})
