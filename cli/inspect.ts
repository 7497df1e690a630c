/**
 * The CLI's views of a running platform: `magpie status` (the nodes),
 * `magpie memory` (the biggest objects, like `ray memory`) and `magpie
 * timeline` (the last calls in Chrome's trace format, like `ray timeline`).
 * Every failure is one line on stderr and exit code 1.
 */
import { writeFileSync } from 'node:fs'
import { formatBytes } from './units.ts'

/** A failure of a command, said in one line. */
class Refused extends Error {}

/** GETs JSON from the gateway; a refusal or an unreachable gateway becomes one clear line. */
async function getJson<T>(url: string, token: string | undefined, path: string): Promise<T> {
  let res: Response
  try {
    res = await fetch(`${url}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} })
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause
    throw new Refused(
      `cannot reach ${url} (${cause?.code ?? cause?.message ?? (err as Error).message}): is it running?`,
    )
  }
  if (res.status === 401) {
    throw new Refused(
      token ? `${url} refused the token` : `${url} wants a token: --token TOKEN or MAGPIE_TOKEN`,
    )
  }
  if (res.status === 403) throw new Refused(`${url} refused the token`)
  const text = await res.text()
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw new Refused(
      `${url} answered ${res.status} with something that is not JSON: is it a magpie gateway?`,
    )
  }
  if (!res.ok) {
    const error = (body as { error?: { code?: string; message?: string } }).error
    throw new Refused(`${url} answered ${res.status} ${error?.code ?? ''}: ${error?.message ?? text}`)
  }
  return body as T
}

/** Runs a command; a refusal is one line and exit 1. */
async function oneLine(run: () => Promise<void>): Promise<number> {
  try {
    await run()
    return 0
  } catch (err) {
    if (!(err instanceof Refused)) throw err
    console.error(`magpie: ${err.message}`)
    return 1
  }
}

/** Columns padded to their widest cell. */
function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? []
  return rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}

interface NodeView {
  id: string
  state: string
  cpus: number
  running: number
  queued: number
  steals: { in: number; out: number }
  stolen?: { in: number; out: number }
  objects: { count: number; bytes: number; spilledCount?: number; spilledBytes?: number }
  process?: { rss: number }
}

/** `magpie status [--json]`: the nodes, their load and their objects. */
export function runStatus(url: string, token: string | undefined, json: boolean): Promise<number> {
  return oneLine(async () => {
    const nodes = await getJson<NodeView[]>(url, token, '/v1/nodes')
    if (json) {
      console.log(JSON.stringify(nodes, null, 2))
      return
    }
    const rows = [
      ['node', 'state', 'cores', 'running', 'queued', 'steals', 'objects', 'memory', 'spilled', 'rss'],
    ]
    for (const n of nodes) {
      rows.push([
        n.id,
        n.state,
        String(n.cpus),
        String(n.running),
        String(n.queued),
        `${n.steals.in} (nodes ${n.stolen?.in ?? 0} in, ${n.stolen?.out ?? 0} out)`,
        String(n.objects.count),
        formatBytes(n.objects.bytes),
        `${formatBytes(n.objects.spilledBytes ?? 0)} (${n.objects.spilledCount ?? 0})`,
        n.process?.rss ? formatBytes(n.process.rss) : '-',
      ])
    }
    console.log(table(rows))
    const alive = nodes.filter((n) => n.state === 'alive')
    console.log(
      `${alive.length} of ${nodes.length} nodes alive, ${alive.reduce((s, n) => s + n.cpus, 0)} cores; ` +
        `${nodes.reduce((s, n) => s + n.running, 0)} running, ${nodes.reduce((s, n) => s + n.queued, 0)} queued`,
    )
  })
}

interface ObjectView {
  id: string
  size: number
  node: string
  function: string | null
  where: string
  heldBy: { calls: number; values: number; handles: number }
  ttlS: number | null
}

/** `magpie memory [--limit 20] [--json]`: the biggest objects, where they are, and what holds them. */
export function runMemory(url: string, token: string | undefined, limit: string | undefined, json: boolean) {
  return oneLine(async () => {
    const query = limit === undefined ? '' : `&limit=${encodeURIComponent(limit)}`
    const objects = await getJson<ObjectView[]>(url, token, `/v1/objects?sort=size${query}`)
    if (json) {
      console.log(JSON.stringify(objects, null, 2))
      return
    }
    const rows = [['id', 'size', 'node', 'where', 'made by', 'held by', 'ttl left']]
    for (const o of objects) {
      const held = Object.entries(o.heldBy)
        .filter(([, n]) => n > 0)
        .map(([what, n]) => `${n} ${n === 1 ? what.replace(/s$/, '') : what}`)
      rows.push([
        o.id,
        formatBytes(o.size),
        o.node,
        o.where,
        o.function ?? 'put',
        held.join(', ') || '-',
        o.ttlS === null ? '-' : `${o.ttlS} s`,
      ])
    }
    console.log(table(rows))
    console.log(`${objects.length} objects, ${formatBytes(objects.reduce((s, o) => s + o.size, 0))} in all`)
  })
}

interface TaskView {
  id: string
  function: string
  actor?: string
  node: string
  worker: number | null
  state: string
  queuedAt: number
  startedAt: number | null
  finishedAt: number | null
}

/**
 * The calls as Chrome trace events (the JSON that Perfetto and
 * chrome://tracing open): a process per node, a thread per worker thread, a
 * slice per call from its start to its end (or now, if it runs).
 */
export function traceOf(tasks: readonly TaskView[], now = Date.now()): { traceEvents: object[] } {
  const pids = new Map<string, number>()
  const threads = new Set<string>()
  const events: object[] = []
  for (const t of tasks) {
    if (t.startedAt === null || t.worker === null) continue
    let pid = pids.get(t.node)
    if (pid === undefined) {
      pid = pids.size + 1
      pids.set(t.node, pid)
      events.push({ ph: 'M', name: 'process_name', pid, tid: 0, args: { name: `node ${t.node}` } })
    }
    if (!threads.has(`${pid}/${t.worker}`)) {
      threads.add(`${pid}/${t.worker}`)
      events.push({ ph: 'M', name: 'thread_name', pid, tid: t.worker, args: { name: `worker ${t.worker}` } })
    }
    events.push({
      ph: 'X',
      name: t.actor ? `${t.function} (actor)` : t.function,
      cat: t.state,
      pid,
      tid: t.worker,
      ts: t.startedAt * 1000,
      dur: Math.max(1, ((t.finishedAt ?? now) - t.startedAt) * 1000),
      args: { id: t.id, state: t.state, waited_ms: t.startedAt - t.queuedAt },
    })
  }
  return { traceEvents: events }
}

/** `magpie timeline --out trace.json [--seconds 60]`: the last calls, to open in Perfetto. */
export function runTimeline(
  url: string,
  token: string | undefined,
  out: string | undefined,
  seconds: string | undefined,
) {
  return oneLine(async () => {
    if (!out) throw new Refused('usage: magpie timeline --out trace.json [--seconds 60]')
    const span = seconds === undefined ? 60 : Number(seconds)
    if (!(span > 0) || span > 86_400) throw new Refused('--seconds must be a number above 0, at most 86400')
    const since = Date.now() - span * 1000
    const tasks = await getJson<TaskView[]>(url, token, `/v1/tasks?since=${Math.floor(since)}&limit=10000`)
    const trace = traceOf(tasks)
    writeFileSync(out, JSON.stringify(trace))
    const calls = trace.traceEvents.filter((e) => (e as { ph: string }).ph === 'X').length
    console.log(`wrote ${calls} calls of the last ${span} s to ${out}: open it in https://ui.perfetto.dev`)
  })
}
