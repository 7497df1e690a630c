/** The platform's own log: JSON lines on stderr, one per request, with no ids, query or tokens. */
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { spawnStart, stopSpawnedAfterAll } from './cluster-helpers.ts'
import { ROOT } from './helpers.ts'

stopSpawnedAfterAll()

const start = async (args: string[]) => {
  // The platform's own default level, not the quieter one the test run sets for the servers it starts.
  const spawned = await spawnStart(['--port', '0', ...args], { env: { MAGPIE_LOG_LEVEL: 'info' } })
  return { child: spawned.child, url: spawned.url, err: spawned.output }
}

describe('the platform log', () => {
  it('writes one JSON line per request: method, route pattern, status, duration, bytes; no ids, query or token', async () => {
    const token = 'tok-secret-123456789'
    const { child, url, err } = await start(['--token', token])
    const auth = { authorization: `Bearer ${token}` }
    const made = await fetch(`${url}/v1/functions/square/invoke?wait=10&note=${token}`, {
      method: 'POST',
      body: '[7]',
      headers: auth,
    })
    expect(await made.text()).toBe('49')
    const id = made.headers.get('x-magpie-object-id') as string
    // Without ?wait, the invoke route's own path (fast-invoke.ts) answers: its line is the same.
    const queued = await fetch(`${url}/v1/functions/square/invoke`, {
      method: 'POST',
      body: '[8]',
      headers: auth,
    })
    expect(queued.status).toBe(202)
    const queuedId = ((await queued.json()) as { id: string }).id
    expect((await fetch(`${url}/v1/objects/${id}`, { headers: auth })).status).toBe(200)
    expect((await fetch(`${url}/v1/objects/${id}`)).status).toBe(401)
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    await exited
    const lines = err()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    const requests = lines.filter((l) => l.msg === 'request')
    expect(requests).toContainEqual(
      expect.objectContaining({
        level: 'info',
        method: 'POST',
        route: '/v1/functions/:name/invoke',
        status: 200,
        ms: expect.any(Number),
        bytes: expect.any(Number),
      }),
    )
    const invokes = requests.filter((r) => r.route === '/v1/functions/:name/invoke')
    expect(invokes.map((r) => r.status)).toEqual([200, 202])
    expect(invokes[1]).toEqual({
      ...invokes[0],
      status: 202,
      ms: expect.any(Number),
      bytes: expect.any(Number),
      time: expect.any(String),
    })
    expect(invokes[1]?.bytes).toBeGreaterThan(100)
    expect(requests.filter((r) => r.route === '/v1/objects/:id').map((r) => r.status)).toEqual([200, 401])
    expect(typeof requests[0]?.time).toBe('string')
    expect(requests[0]?.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    expect(err()).not.toContain(token)
    expect(err()).not.toContain(id)
    expect(err()).not.toContain(queuedId)
  }, 30_000)

  it('keeps request lines out below info, and refuses an unknown level', async () => {
    const { child, url, err } = await start(['--log-level', 'warn'])
    expect((await fetch(`${url}/v1/functions`)).status).toBe(200)
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    await exited
    expect(err()).not.toContain('"msg":"request"')
    const bad = await promisify(execFile)(process.execPath, [
      join(ROOT, 'bin/magpie.mjs'),
      'start',
      '--log-level',
      'loud',
    ]).catch((e: { code: number; stderr: string }) => e)
    expect((bad as { code: number }).code).toBe(1)
    expect((bad as { stderr: string }).stderr).toMatch(/--log-level must be one of/)
  }, 30_000)
})
