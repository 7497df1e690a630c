/**
 * Seeing what runs: recent calls (GET /v1/tasks), the biggest objects
 * (GET /v1/objects?sort=size), the metrics and the Grafana dashboard built
 * on them, and the CLI's status, memory and timeline.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { connect } from '../sdk/index.ts'
import { freePort } from './cluster-helpers.ts'
import { ROOT, usePlatform } from './helpers.ts'

const TOKEN = 'inspect-token-0123456789'
const ctx = usePlatform({ cpus: 2, token: TOKEN })
const auth = { authorization: `Bearer ${TOKEN}` }
const get = (path: string) => fetch(`${ctx.url}${path}`, { headers: auth })

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [
      join(ROOT, 'bin/magpie.mjs'),
      ...args,
    ])
    return { code: 0, out: stdout, err: stderr }
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string }
    return { code: err.code, out: err.stdout, err: err.stderr }
  }
}

describe('recent calls', () => {
  it('lists them newest first, filtered by state and function, with their thread and times', async () => {
    const mp = connect(ctx.url, { token: TOKEN })
    try {
      const ok = mp.remote('talker').remote(1, 0, 'listed')
      await mp.get(ok, { timeout: 20 })
      // Made once the first has finished: it is newer, whichever node lists it.
      const bad = mp.remote('fail-loud').remote()
      await expect(mp.get(bad, { timeout: 20 })).rejects.toThrow(/boom/)
      const all = (await (await get('/v1/tasks?limit=50')).json()) as Array<Record<string, unknown>>
      const mine = all.find((t) => t.id === ok.id)
      expect(mine).toMatchObject({
        function: 'talker',
        state: 'finished',
        node: expect.any(String),
        worker: expect.any(Number),
      })
      expect(mine?.startedAt as number).toBeGreaterThanOrEqual(mine?.queuedAt as number)
      expect(mine?.finishedAt as number).toBeGreaterThanOrEqual(mine?.startedAt as number)
      expect(all.findIndex((t) => t.id === bad.id)).toBeLessThan(all.findIndex((t) => t.id === ok.id))
      const failed = (await (await get('/v1/tasks?state=failed&function=fail-loud')).json()) as Array<{
        id: string
        error: { code: string; message: string }
      }>
      expect(failed[0]).toMatchObject({
        id: bad.id,
        error: { code: 'FUNCTION_ERROR', message: 'boom from fail-loud' },
      })
      expect((await get('/v1/tasks?state=done')).status).toBe(400)
      expect((await get('/v1/tasks?limit=-1')).status).toBe(400)
    } finally {
      await mp.close()
    }
  }, 30_000)
})

describe('metrics', () => {
  it('has task histograms by function, tasks and nodes by state, steals, node processes and HTTP durations', async () => {
    // On a cluster, nodes send their counts with their heartbeats.
    let text = ''
    for (let i = 0; i < 50; i++) {
      text = await (await get('/metrics')).text()
      if (/magpie_task_duration_seconds_count\{node="[^"]+",function="talker"\} [1-9]/.test(text)) break
      await new Promise((r) => setTimeout(r, 100))
    }
    for (const pattern of [
      /magpie_task_duration_seconds_bucket\{node="[^"]+",function="talker",le="0.005"\} \d+/,
      /magpie_task_duration_seconds_count\{node="[^"]+",function="talker"\} [1-9]/,
      /magpie_task_queue_seconds_count\{node="[^"]+",function="talker"\} [1-9]/,
      /magpie_tasks\{node="[^"]+",state="running"\} \d+/,
      /magpie_nodes\{state="alive"\} [1-9]/,
      /magpie_node_steals_in_total\{node="[^"]+"\} \d+/,
      /magpie_node_resident_memory_bytes\{node="[^"]+"\} [1-9]/,
      /magpie_http_request_duration_seconds_count\{method="GET",route="\/v1\/tasks",status="200"\} [1-9]/,
      /process_resident_memory_bytes [1-9]/,
      /nodejs_eventloop_lag_seconds /,
    ]) {
      expect(text).toMatch(pattern)
    }
  })

  it('has every metric the Grafana dashboard in deploy/ uses', async () => {
    const text = await (await get('/metrics')).text()
    const exposed = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]))
    const board = JSON.parse(readFileSync(join(ROOT, 'deploy/grafana-dashboard.json'), 'utf8')) as {
      panels: Array<{ targets: Array<{ expr: string }> }>
    }
    const used = new Set<string>()
    for (const panel of board.panels) {
      for (const target of panel.targets) {
        for (const m of target.expr.matchAll(/\b(magpie_[a-z_]+|process_[a-z_]+|nodejs_[a-z0-9_]+)\b/g))
          used.add((m[1] as string).replace(/_(bucket|sum|count)$/, ''))
      }
    }
    expect(used.size).toBeGreaterThan(10)
    for (const name of used) expect(exposed, name).toContain(name)
  })
})

describe('the CLI', () => {
  it('lists the biggest objects with what holds them (magpie memory, GET /v1/objects?sort=size)', async () => {
    const small = await fetch(`${ctx.url}/v1/objects`, { method: 'POST', headers: auth, body: '"small"' })
    const big = await fetch(`${ctx.url}/v1/objects?ttlS=600`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/octet-stream' },
      body: new Uint8Array(3 * 2 ** 20),
    })
    const bigId = ((await big.json()) as { id: string }).id
    expect(small.status).toBe(201)
    const list = (await (await get('/v1/objects?sort=size&limit=5')).json()) as Array<Record<string, unknown>>
    expect(list[0]).toMatchObject({ id: bigId, size: 3 * 2 ** 20, node: expect.any(String), where: 'memory' })
    expect(list[0]?.ttlS as number).toBeGreaterThan(500)
    expect(list.length).toBeLessThanOrEqual(5)
    expect((await get('/v1/objects?sort=name')).status).toBe(400)
    const shown = await cli('memory', '--url', ctx.url, '--token', TOKEN, '--limit', '3')
    expect(shown.code).toBe(0)
    expect(shown.out).toMatch(new RegExp(`^${bigId}\\s+3\\.0 MiB\\s+\\S+\\s+memory\\s+put`, 'm'))
    const json = JSON.parse(
      (await cli('memory', '--url', ctx.url, '--token', TOKEN, '--json')).out,
    ) as unknown[]
    expect(json.length).toBeGreaterThan(0)
  }, 30_000)

  it('shows the status in human units or JSON, and says in one line why not', async () => {
    const shown = await cli('status', '--url', ctx.url, '--token', TOKEN)
    expect(shown.code).toBe(0)
    expect(shown.out).toMatch(/^\S+\s+alive\s+\d\s/m)
    expect(shown.out).toMatch(/MiB|KiB| B/)
    const json = JSON.parse(
      (await cli('status', '--url', ctx.url, '--token', TOKEN, '--json')).out,
    ) as unknown[]
    expect(json.length).toBeGreaterThan(0)
    const noToken = await cli('status', '--url', ctx.url)
    expect(noToken).toMatchObject({ code: 1, out: '' })
    expect(noToken.err.trim()).toMatch(/^magpie: \S+ wants a token: --token TOKEN or MAGPIE_TOKEN$/)
    const wrong = await cli('status', '--url', ctx.url, '--token', 'nope-nope-nope-nope')
    expect(wrong.code).toBe(1)
    expect(wrong.err.trim()).toMatch(/^magpie: \S+ refused the token$/)
    const down = await cli('status', '--url', `http://127.0.0.1:${await freePort()}`)
    expect(down.code).toBe(1)
    expect(down.err.trim().split('\n')).toHaveLength(1)
    expect(down.err).toMatch(/cannot reach .*ECONNREFUSED.*is it running\?/)
  }, 30_000)

  it('writes the last minute of calls in Chrome trace format (magpie timeline)', async () => {
    const mp = connect(ctx.url, { token: TOKEN })
    try {
      await mp.get(mp.remote('talker').remote(1, 0, 'traced'), { timeout: 20 })
    } finally {
      await mp.close()
    }
    const out = join(mkdtempSync(join(tmpdir(), 'magpie-trace-')), 'trace.json')
    const run = await cli('timeline', '--url', ctx.url, '--token', TOKEN, '--out', out)
    expect(run.code).toBe(0)
    expect(run.out).toMatch(/^wrote \d+ calls of the last 60 s to /)
    const trace = JSON.parse(readFileSync(out, 'utf8')) as { traceEvents: Array<Record<string, unknown>> }
    const slices = trace.traceEvents.filter((e) => e.ph === 'X')
    expect(slices.length).toBeGreaterThan(0)
    expect(slices.find((s) => s.name === 'talker')).toMatchObject({
      pid: expect.any(Number),
      tid: expect.any(Number),
      ts: expect.any(Number),
      dur: expect.any(Number),
    })
    expect(trace.traceEvents).toContainEqual(expect.objectContaining({ ph: 'M', name: 'process_name' }))
    expect((await cli('timeline', '--url', ctx.url, '--token', TOKEN)).code).toBe(1)
  }, 30_000)
})
