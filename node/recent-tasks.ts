/**
 * The calls a node saw lately, for `GET /v1/tasks`, the dashboard and the
 * timeline: a bounded ring (the oldest settled ones go first), each with its
 * function, thread and times; and, since the start, histograms of how long
 * calls ran and waited, by function (`/metrics`).
 */
import { BadRequestError, type SerializedError } from '../sdk/errors.ts'

export type TaskState = 'queued' | 'running' | 'finished' | 'failed' | 'cancelled'

export interface TaskRecord {
  id: string
  /** Its function's name (without the version). */
  function: string
  /** The actor whose method it is, if it is one. */
  actor?: string
  /** The thread it ran on (an index: one per CPU first, then sized and actor threads), once it started. */
  worker: number | null
  state: TaskState
  /** Milliseconds since the epoch. */
  queuedAt: number
  startedAt: number | null
  finishedAt: number | null
  error?: SerializedError
  /** Left for another node: not listed here. */
  forgotten?: true
}

/** Upper bounds of the histogram buckets, in seconds (Prometheus `le`). */
export const SECONDS_BUCKETS = [
  0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
] as const

/** Counts by bucket (the last is +Inf), their sum and count: cumulative, as Prometheus reads them. */
export interface HistogramData {
  counts: number[]
  sum: number
  count: number
}

export interface TaskFilter {
  state?: TaskState | undefined
  function?: string | undefined
  /** Only those queued at or after this time (ms since the epoch). */
  since?: number | undefined
  limit?: number | undefined
}

/** Calls kept, at most, by default. */
export const RECENT_TASKS = 10_000

/** Function names without their version, by the string the calls carry (a few functions, many calls). */
const names = new Map<string, string>()
function nameOf(fn: string): string {
  let name = names.get(fn)
  if (name === undefined) {
    const at = fn.indexOf('@')
    name = at < 0 ? fn : fn.slice(0, at)
    if (names.size < 10_000) names.set(fn, name)
  }
  return name
}

function observe(into: Map<string, HistogramData>, fn: string, seconds: number): void {
  let h = into.get(fn)
  if (!h) {
    h = { counts: new Array(SECONDS_BUCKETS.length + 1).fill(0), sum: 0, count: 0 }
    into.set(fn, h)
  }
  let i = 0
  while (i < SECONDS_BUCKETS.length && seconds > (SECONDS_BUCKETS[i] as number)) i++
  h.counts[i] = (h.counts[i] ?? 0) + 1
  h.sum += seconds
  h.count += 1
}

export class RecentTasks {
  /** The records by id, and the ring that keeps their order (a Map whose oldest keep going is slow to iterate). */
  readonly #records = new Map<string, TaskRecord>()
  readonly #ring: Array<TaskRecord | undefined>
  #next = 0
  readonly #max: number
  readonly #now: () => number
  /** Seconds calls ran, and waited before they ran, by function. */
  readonly durations = new Map<string, HistogramData>()
  readonly waits = new Map<string, HistogramData>()

  constructor(max = RECENT_TASKS, now: () => number = Date.now) {
    this.#max = max
    this.#ring = new Array(max)
    this.#now = now
  }

  /** A call was submitted here, now: when it was, for its wait. */
  queued(id: string, fn: string, actor?: string): number {
    const record: TaskRecord = {
      id,
      function: nameOf(fn),
      worker: null,
      state: 'queued',
      queuedAt: this.#now(),
      startedAt: null,
      finishedAt: null,
    }
    if (actor !== undefined) record.actor = actor
    // The oldest goes, whatever its state: the ring shows what happened lately, the histograms keep the rest.
    const oldest = this.#ring[this.#next]
    if (oldest && this.#records.get(oldest.id) === oldest) this.#records.delete(oldest.id)
    this.#ring[this.#next] = record
    this.#next = (this.#next + 1) % this.#max
    this.#records.set(id, record)
    return record.queuedAt
  }

  /** A call went to a thread (queued at `queuedAt`, if it was here); when that was, for its duration. */
  started(id: string, fn: string, worker: number, queuedAt: number | undefined): number {
    const now = this.#now()
    if (queuedAt !== undefined) observe(this.waits, nameOf(fn), (now - queuedAt) / 1000)
    const record = this.#records.get(id)
    if (record) {
      record.state = 'running'
      record.worker = worker
      record.startedAt = now
    }
    return now
  }

  /** A call settled (it started at `startedAt`, if it ran here). */
  settled(
    id: string,
    fn: string,
    state: 'finished' | 'failed' | 'cancelled',
    startedAt: number | undefined,
    error?: SerializedError,
  ): void {
    const now = this.#now()
    if (startedAt !== undefined) observe(this.durations, nameOf(fn), (now - startedAt) / 1000)
    const record = this.#records.get(id)
    if (!record || record.finishedAt !== null) return
    record.state = state
    record.finishedAt = now
    if (error) record.error = error
  }

  /** A call left for another node (stolen): that node keeps its record. */
  forget(id: string): void {
    const record = this.#records.get(id)
    if (!record) return
    this.#records.delete(id)
    // Its place in the ring stays, empty of it: list() skips what #records no longer has.
    record.forgotten = true
  }

  get(id: string): TaskRecord | undefined {
    return this.#records.get(id)
  }

  /** The calls that match, newest first. */
  list(filter: TaskFilter = {}): TaskRecord[] {
    const out: TaskRecord[] = []
    const limit = filter.limit ?? 100
    for (let n = 1; n <= this.#max && out.length < limit; n++) {
      const r = this.#ring[(this.#next - n + this.#max) % this.#max]
      if (!r) break
      if (r.forgotten) continue
      if (filter.state !== undefined && r.state !== filter.state) continue
      if (filter.function !== undefined && r.function !== filter.function) continue
      if (
        filter.since !== undefined &&
        r.queuedAt < filter.since &&
        (r.finishedAt ?? Infinity) < filter.since
      )
        continue
      out.push(r)
    }
    return out
  }
}

const STATES: readonly TaskState[] = ['queued', 'running', 'finished', 'failed', 'cancelled']
/** The most calls one answer lists. */
export const MAX_TASKS_LISTED = RECENT_TASKS

/** A filter from a query (`state`, `function`, `since` in ms since the epoch, `limit`); BadRequestError if it is not one. */
export function parseTaskFilter(query: (name: string) => string | undefined): TaskFilter {
  const state = query('state')
  if (state !== undefined && !(STATES as readonly string[]).includes(state)) {
    throw new BadRequestError(`state must be one of ${STATES.join(', ')}`)
  }
  const number = (name: string, max: number) => {
    const raw = query(name)
    if (raw === undefined) return undefined
    const value = Number(raw)
    if (!/^\d+$/.test(raw) || value > max)
      throw new BadRequestError(`${name} must be an integer from 0 to ${max}`)
    return value
  }
  const fn = query('function')
  return {
    ...(state === undefined ? {} : { state: state as TaskState }),
    ...(fn === undefined || fn === '' ? {} : { function: fn }),
    since: number('since', Number.MAX_SAFE_INTEGER),
    limit: number('limit', MAX_TASKS_LISTED) ?? 100,
  }
}

/** The query of a filter, for passing it on to a node. */
export function taskFilterQuery(filter: TaskFilter): string {
  const params = new URLSearchParams()
  for (const [key, value] of Object.entries(filter)) if (value !== undefined) params.set(key, String(value))
  return `?${params}`
}
