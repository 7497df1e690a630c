/**
 * Hyperparameter search on tasks and actors: `import { tune } from 'magpie/tune'`.
 * A search space of grid and sampled values; trials run as calls of a
 * function that reports its metrics with `report()` at each step (read from
 * its logs), or as actors whose `step()` returns them; at most
 * `maxConcurrent` at once; ASHA stops the trials that fall behind at each
 * rung. A trial that fails is reported and the search goes on.
 */

import type { Client } from './client.ts'
import type { ObjectRef } from './codec.ts'
import { MagpieError } from './errors.ts'
import { RUNTIME_KEY } from './runtime.ts'
import { seeded } from './seeded.ts'

// ---- search spaces ----

const kDomain = Symbol.for('magpie.tune.domain')

interface Domain<T> {
  [kDomain]: 'grid' | 'sample'
  values?: readonly T[]
  sample?: (random: () => number) => T
}

/** Every one of `values`, each combined with every other grid value. */
export function grid<T>(values: readonly T[]): T {
  if (!Array.isArray(values) || values.length === 0) throw new TypeError('grid needs a non-empty array')
  return { [kDomain]: 'grid', values } as unknown as T
}

/** One of `values`, drawn at random for each trial. */
export function choice<T>(values: readonly T[]): T {
  if (!Array.isArray(values) || values.length === 0) throw new TypeError('choice needs a non-empty array')
  return sampled((r) => values[Math.floor(r() * values.length)] as T)
}

/** A number drawn uniformly from [low, high). */
export function uniform(low: number, high: number): number {
  checkRange(low, high)
  return sampled((r) => low + r() * (high - low))
}

/** A number drawn uniformly on a log scale from [low, high), both above 0. */
export function loguniform(low: number, high: number): number {
  checkRange(low, high)
  if (low <= 0) throw new TypeError('loguniform needs low > 0')
  return sampled((r) => Math.exp(Math.log(low) + r() * (Math.log(high) - Math.log(low))))
}

/** An integer drawn uniformly from [low, high). */
export function randint(low: number, high: number): number {
  checkRange(low, high)
  return sampled((r) => Math.floor(low + r() * (high - low)))
}

function sampled<T>(sample: (random: () => number) => T): T {
  return { [kDomain]: 'sample', sample } as unknown as T
}

function checkRange(low: number, high: number): void {
  if (!Number.isFinite(low) || !Number.isFinite(high) || low >= high) {
    throw new TypeError(`need finite low < high, got ${low} and ${high}`)
  }
}

function domainOf(value: unknown): Domain<unknown> | undefined {
  return typeof value === 'object' && value !== null && kDomain in value
    ? (value as Domain<unknown>)
    : undefined
}

/** The configs of a search: every grid combination, `numSamples` times, sampled values drawn anew each time. */
export function configsOf(
  space: Record<string, unknown>,
  numSamples: number,
  random: () => number,
): Array<Record<string, unknown>> {
  const keys = Object.keys(space)
  let combos: Array<Record<string, unknown>> = [{}]
  for (const k of keys) {
    const d = domainOf(space[k])
    if (d?.[kDomain] !== 'grid') continue
    combos = combos.flatMap((c) => (d.values ?? []).map((v) => ({ ...c, [k]: v })))
  }
  const out: Array<Record<string, unknown>> = []
  for (let i = 0; i < numSamples; i++) {
    for (const combo of combos) {
      const config: Record<string, unknown> = {}
      for (const k of keys) {
        const d = domainOf(space[k])
        if (!d) config[k] = space[k]
        else if (d[kDomain] === 'grid') config[k] = combo[k]
        else config[k] = d.sample?.(random)
      }
      out.push(config)
    }
  }
  return out
}

// ---- early stopping: ASHA ----

export interface AshaOptions {
  /** The most steps a trial runs (default 100). */
  maxT?: number
  /** Steps every trial runs before it may be stopped (default 1). */
  gracePeriod?: number
  /** Keep the best 1 in this many at each rung (default 3). */
  reductionFactor?: number
}

/**
 * Asynchronous successive halving (Li et al., 2018): rungs at
 * gracePeriod × reductionFactor^k steps; a trial reaching a rung goes on
 * only if its metric is in the best 1/reductionFactor of those recorded there.
 */
export class Asha {
  readonly maxT: number
  readonly #rungs: Array<{ at: number; recorded: number[] }>
  readonly #rf: number

  constructor(options: AshaOptions = {}) {
    this.maxT = options.maxT ?? 100
    const grace = options.gracePeriod ?? 1
    this.#rf = options.reductionFactor ?? 3
    if (!(this.#rf > 1)) throw new TypeError('reductionFactor must be above 1')
    if (!(grace >= 1) || !(this.maxT >= grace)) throw new TypeError('need 1 <= gracePeriod <= maxT')
    this.#rungs = []
    for (let at = grace; at < this.maxT; at *= this.#rf)
      this.#rungs.push({ at: Math.round(at), recorded: [] })
  }

  /** Whether a trial at `step` with `score` (higher is better) goes on. */
  onStep(step: number, score: number): boolean {
    if (step >= this.maxT) return false
    const rung = this.#rungs.find((r) => r.at === step)
    if (!rung || Number.isNaN(score)) return true
    rung.recorded.push(score)
    const sorted = [...rung.recorded].sort((a, b) => b - a)
    // The best ceil(n / rf) recorded so far at this rung go on.
    const keep = Math.max(1, Math.ceil(sorted.length / this.#rf))
    return score >= (sorted[keep - 1] as number)
  }
}

/** ASHA early stopping, for `tune({ scheduler: asha({ maxT: 27 }) })`. */
export function asha(options: AshaOptions = {}): Asha {
  return new Asha(options)
}

// ---- reporting from inside a trial ----

/** The prefix of a report line in a trial's logs. */
export const REPORT_PREFIX = '@magpie-tune '

/**
 * Inside a trainable function: reports this step's metrics. Await it: the
 * trial may have been stopped, and then it throws, ending the call.
 * @example
 * for (let step = 1; step <= 100; step++) await report({ loss: train() })
 */
export async function report(metrics: Record<string, number>): Promise<void> {
  const line = REPORT_PREFIX + JSON.stringify(metrics)
  const rt = (globalThis as { [RUNTIME_KEY]?: { report?: (l: string) => void; signal(): AbortSignal } })[
    RUNTIME_KEY
  ]
  if (rt?.report) rt.report(line)
  else console.log(line)
  // A turn of the event loop, so that a stop sent meanwhile arrives.
  await new Promise((resolve) => setTimeout(resolve, 0))
  if (rt?.signal().aborted) throw new MagpieError('the trial was stopped', { code: 'TASK_CANCELLED' })
}

// ---- the search ----

export interface TuneOptions {
  /** A function name, called with the config, reporting with `report()`; or an actor class whose `step()` returns the metrics. */
  trainable: string | { actor: string }
  space: Record<string, unknown>
  /** The metric to optimize, as reported. */
  metric: string
  mode?: 'min' | 'max'
  /** How many times each grid combination is run (sampled values drawn anew each time); default 1. */
  numSamples?: number
  /** At most this many trials at once (default 4). */
  maxConcurrent?: number
  /** Early stopping; without it, trials run to the end (an actor trainable: `maxSteps` steps). */
  scheduler?: Asha
  /** Steps of an actor trainable without a scheduler (default 100). */
  maxSteps?: number
  /** Seed of the sampled values (default 0). */
  seed?: number
  /** Called after each reported step. */
  onStep?: (trial: Trial, metrics: Record<string, number>) => void
}

export interface Trial {
  id: number
  config: Record<string, unknown>
  status: 'pending' | 'running' | 'done' | 'stopped' | 'failed'
  steps: number
  last?: Record<string, number>
  error?: string
}

type OnMetrics = (trial: Trial, metrics: Record<string, number>) => 'go' | 'stop' | 'end'

export interface TuneResult {
  best?: Trial
  trials: Trial[]
  /** Steps run by every trial together. */
  totalSteps: number
  seconds: number
  /** The trials as a text table, best first. */
  table(): string
}

/**
 * Runs a search on a connection and answers the best trial and all of them.
 * @example
 * const { best } = await tune(mp, { trainable: 'train', space: { lr: loguniform(1e-4, 1e-1) }, metric: 'loss', numSamples: 20, scheduler: asha({ maxT: 27 }) })
 */
export async function tune(mp: Client, options: TuneOptions): Promise<TuneResult> {
  const started = Date.now()
  const sign = (options.mode ?? 'min') === 'min' ? -1 : 1
  const random = seeded(options.seed ?? 0)
  const configs = configsOf(options.space, options.numSamples ?? 1, random)
  const trials: Trial[] = configs.map((config, id) => ({ id, config, status: 'pending', steps: 0 }))
  // Trials start in a seeded random order: early stopping judges each against those seen before it,
  // so a grid written from worst to best would otherwise let every trial through.
  const order = shuffled(trials, random)
  const limit = Math.max(1, options.maxConcurrent ?? 4)
  const scheduler = options.scheduler
  let next = 0

  /** Takes a step's metrics: whether the trial goes on, is stopped early, or has run its most steps. */
  const onMetrics: OnMetrics = (trial, metrics) => {
    trial.steps++
    trial.last = metrics
    options.onStep?.(trial, metrics)
    const value = metrics[options.metric]
    if (!scheduler) return 'go'
    if (trial.steps >= scheduler.maxT) return 'end'
    return scheduler.onStep(trial.steps, typeof value === 'number' ? sign * value : Number.NaN)
      ? 'go'
      : 'stop'
  }

  const runOne = async (trial: Trial): Promise<void> => {
    trial.status = 'running'
    try {
      const stopped =
        typeof options.trainable === 'string'
          ? await runFunction(mp, options.trainable, trial, onMetrics)
          : await runActor(
              mp,
              options.trainable.actor,
              trial,
              onMetrics,
              scheduler?.maxT ?? options.maxSteps ?? 100,
            )
      trial.status = stopped ? 'stopped' : 'done'
    } catch (err) {
      trial.status = 'failed'
      trial.error = (err as Error).message
    }
  }
  const lane = async (): Promise<void> => {
    while (next < order.length) await runOne(order[next++] as Trial)
  }
  await Promise.all(Array.from({ length: Math.min(limit, trials.length) }, lane))

  const scoreOf = (t: Trial) => {
    const v = t.last?.[options.metric]
    return typeof v === 'number' && !Number.isNaN(v) ? sign * v : Number.NEGATIVE_INFINITY
  }
  const ranked = trials.filter((t) => t.status !== 'failed' && t.last).sort((a, b) => scoreOf(b) - scoreOf(a))
  return {
    ...(ranked[0] ? { best: ranked[0] } : {}),
    trials,
    totalSteps: trials.reduce((n, t) => n + t.steps, 0),
    seconds: (Date.now() - started) / 1000,
    table: () => tableOf([...ranked, ...trials.filter((t) => !ranked.includes(t))], options.metric),
  }
}

/** A trial as a call: its report lines followed in its logs; stopped by cancelling it. */
async function runFunction(mp: Client, name: string, trial: Trial, onMetrics: OnMetrics): Promise<boolean> {
  const ref: ObjectRef = mp.remote(name).options({ maxRetries: 0 }).remote(trial.config)
  let stopped: boolean
  for await (const line of mp.logs(ref, { follow: true })) {
    if (!line.startsWith(REPORT_PREFIX)) continue
    let metrics: Record<string, number>
    try {
      metrics = JSON.parse(line.slice(REPORT_PREFIX.length))
    } catch {
      continue
    }
    const verdict = onMetrics(trial, metrics)
    if (verdict !== 'go') {
      stopped = verdict === 'stop'
      await mp.cancel(ref)
      return stopped
    }
  }
  await mp.get(ref)
  return false
}

/** A trial as an actor made with the config: `step()` until the scheduler stops it or `maxSteps`. */
async function runActor(
  mp: Client,
  cls: string,
  trial: Trial,
  onMetrics: OnMetrics,
  maxSteps: number,
): Promise<boolean> {
  const actor = mp.actor(cls).remote(trial.config) as unknown as { step: { remote(): ObjectRef } }
  try {
    for (let i = 0; i < maxSteps; i++) {
      const metrics = (await mp.get(actor.step.remote())) as Record<string, number>
      const verdict = onMetrics(trial, metrics)
      if (verdict !== 'go') return verdict === 'stop'
    }
    return false
  } finally {
    await mp.kill(actor as never).catch(() => {})
  }
}

function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[out[i], out[j]] = [out[j] as T, out[i] as T]
  }
  return out
}

function tableOf(trials: readonly Trial[], metric: string): string {
  const rows = trials.map((t) => [
    String(t.id),
    t.status,
    String(t.steps),
    t.last?.[metric] === undefined ? '' : String(round(t.last[metric] as number)),
    JSON.stringify(t.config, (_k, v) => (typeof v === 'number' ? round(v) : v)),
    t.error ?? '',
  ])
  const head = ['trial', 'status', 'steps', metric, 'config', 'error']
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)))
  return [head, ...rows]
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i] as number))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}

function round(x: number): number {
  return Math.round(x * 1e4) / 1e4
}
