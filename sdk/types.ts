/** Types shared by the SDK, the in-function API and the servers. */
import type { ObjectRef } from './codec.ts'

/** Options of one call, or a function's `config` defaults. */
export interface CallOptions {
  /** Stop the call after this many milliseconds (FUNCTION_TIMEOUT). */
  timeoutMs?: number
  /** Retries after a crashed worker or a lost node (default 3). */
  maxRetries?: number
  /** Retry when the function throws, too: any error (true), or only errors of these names (default false). */
  retryExceptions?: boolean | string[]
  /** First wait before a retry, in ms; it doubles on each retry, up to 30 s, with jitter (default 100). */
  retryDelayMs?: number
  /** CPU slots the call takes (default 1). */
  numCpus?: number
  /** Custom resources the call needs, such as `{ gpu: 1 }`. */
  resources?: Record<string, number>
  /** How many calls of an async function may share one worker while they await (default 1). */
  concurrency?: number
  /** Seconds the result is kept after it was last read (default 3600). */
  ttlS?: number
  /**
   * The most heap the call's worker thread may use, in MiB (at least 16): the
   * call runs in a thread of that size, and past it fails with WORKER_CRASHED
   * (retried by the usual rules) while the node lives on.
   */
  memoryMb?: number
  /** Of an actor: how many of its async method calls may run at once (default 1: one at a time). */
  maxConcurrency?: number
  /** Of an actor: how many times it is made again after its thread or node died (default 0). */
  maxRestarts?: number
  /** Of an actor: how many times a method call in flight when it died runs again (default 0: ACTOR_DIED). */
  maxTaskRetries?: number
  /**
   * Of an actor whose class has checkpoint() and restore(state): checkpointed
   * after every N calls (a number), or `{ calls, seconds }`: after N calls or
   * once T seconds have passed since the last, whichever comes first.
   */
  checkpointEvery?: number | { calls?: number; seconds?: number }
  /** Of an actor: 'detached' lives until killed, however long it idles (else ttlS after its last call). */
  lifetime?: 'detached'
  /** In a function's config only: variables its calls read with `env` from 'magpie'. */
  env?: Record<string, string>
  /** In a function's config only: the names of the secrets (`magpie secret set`) its calls may read with `env`. */
  secrets?: string[]
  /**
   * In a function's config only: concurrent calls arrive as one, with the
   * array of their (single) arguments, and the array it returns is split
   * back to them in order: at most `maxSize` calls, waiting at most
   * `maxWaitMs` for more after the first.
   */
  batch?: BatchConfig
}

/** How a function's calls are batched (its `config.batch`). */
export interface BatchConfig {
  maxSize: number
  maxWaitMs: number
}

/** Options of `cancel`. */
export interface CancelOptions {
  /** Stop a running call at once, by replacing its worker thread (default false: its signal aborts, and it gets 5 s). */
  force?: boolean
  /** Cancel the calls it made too (default true). */
  recursive?: boolean
}

/** Options of `get`. */
export interface GetOptions {
  /** Seconds to wait before throwing GetTimeoutError (default: no limit). */
  timeout?: number
  /** Draw a progress bar on stderr while a list resolves. */
  progress?: boolean
}

/** Options of `wait`. */
export interface WaitOptions {
  /** How many refs to wait for (default 1). */
  numReturns?: number
  /** Seconds to wait at most (default: until numReturns are ready). */
  timeout?: number
}

export interface WaitResult<T = unknown> {
  ready: ObjectRef<T>[]
  pending: ObjectRef<T>[]
}

// biome-ignore lint/suspicious/noExplicitAny: any function shape may be called remotely
export type AnyFunction = (...args: any[]) => unknown

/** An argument may be passed as a value or as a ref to one. */
export type RemoteArgs<P extends unknown[]> = { [K in keyof P]: P[K] | ObjectRef<P[K]> }

/** What a function resolves to, as `get` returns it. */
export type RemoteResult<F extends AnyFunction> = Awaited<ReturnType<F>>

/** A function that can be called remotely; `.remote()` returns an ObjectRef at once. */
export interface RemoteFunction<F extends AnyFunction = AnyFunction> {
  readonly name: string
  remote(...args: RemoteArgs<Parameters<F>>): ObjectRef<RemoteResult<F>>
  options(options: CallOptions): RemoteFunction<F>
}

/** The longest time limit a call may have: a day. */
export const MAX_TIMEOUT_MS = 24 * 3600 * 1000

/** The smallest and largest heap a call may ask for, in MiB. */
const MIN_MEMORY_MB = 16
const MAX_MEMORY_MB = 1024 * 1024

/** Names of variables and secrets: like environment variables. */
export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/

/**
 * Checks call options once, at the edge, with messages that name the
 * field; or (`config`) a function's config, which may
 * also set `env` and `secrets`: a caller can never grant itself a secret.
 */
export function checkCallOptions(value: unknown, where = 'options', config = false): CallOptions {
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value)) throw new TypeError(`${where} must be an object`)
  const o = value as Record<string, unknown>
  const out: CallOptions = {}
  const nonNegative = (key: keyof CallOptions, integer: boolean) => {
    const v = o[key]
    if (v === undefined) return
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (integer && !Number.isInteger(v))) {
      throw new TypeError(`${where}.${key} must be a non-negative ${integer ? 'integer' : 'number'}`)
    }
    ;(out as Record<string, unknown>)[key] = v
  }
  nonNegative('timeoutMs', false)
  if ((out.timeoutMs ?? 0) > MAX_TIMEOUT_MS)
    throw new TypeError(`${where}.timeoutMs must be at most ${MAX_TIMEOUT_MS} (a day)`)
  nonNegative('maxRetries', true)
  nonNegative('retryDelayMs', false)
  if ((out.retryDelayMs ?? 0) > MAX_TIMEOUT_MS)
    throw new TypeError(`${where}.retryDelayMs must be at most ${MAX_TIMEOUT_MS} (a day)`)
  nonNegative('numCpus', false)
  nonNegative('ttlS', false)
  nonNegative('concurrency', true)
  nonNegative('memoryMb', true)
  nonNegative('maxConcurrency', true)
  if (out.maxConcurrency === 0) throw new TypeError(`${where}.maxConcurrency must be a positive integer`)
  nonNegative('maxRestarts', true)
  nonNegative('maxTaskRetries', true)
  if (o.checkpointEvery !== undefined)
    out.checkpointEvery = checkEvery(o.checkpointEvery, `${where}.checkpointEvery`)
  if (o.lifetime !== undefined) {
    if (o.lifetime !== 'detached') throw new TypeError(`${where}.lifetime may only be "detached"`)
    out.lifetime = 'detached'
  }
  if (out.memoryMb !== undefined && (out.memoryMb < MIN_MEMORY_MB || out.memoryMb > MAX_MEMORY_MB))
    throw new TypeError(`${where}.memoryMb must be from ${MIN_MEMORY_MB} to ${MAX_MEMORY_MB} (MiB)`)
  if (out.concurrency === 0) throw new TypeError(`${where}.concurrency must be a positive integer`)
  if (out.ttlS === 0) throw new TypeError(`${where}.ttlS must be a positive number of seconds`)
  if (o.retryExceptions !== undefined) {
    const r = o.retryExceptions
    const names = Array.isArray(r) && r.every((n) => typeof n === 'string' && n.length > 0)
    if (typeof r !== 'boolean' && !names)
      throw new TypeError(`${where}.retryExceptions must be true, false or a list of error names`)
    out.retryExceptions = Array.isArray(r) ? [...(r as string[])] : (r as boolean)
  }
  if (o.resources !== undefined) {
    const r = o.resources
    if (typeof r !== 'object' || r === null || Array.isArray(r)) {
      throw new TypeError(`${where}.resources must be an object of numbers`)
    }
    for (const [k, v] of Object.entries(r)) {
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
        throw new TypeError(`${where}.resources.${k} must be a non-negative number`)
      }
    }
    out.resources = { ...(r as Record<string, number>) }
  }
  if (o.env !== undefined || o.secrets !== undefined) {
    if (!config) throw new TypeError(`${where}: env and secrets are set in a function's config only`)
    checkEnv(o.env, o.secrets, where, out)
  }
  if (o.batch !== undefined) {
    if (!config) throw new TypeError(`${where}: batch is set in a function's config only`)
    out.batch = checkBatch(o.batch, `${where}.batch`)
  }
  for (const key of Object.keys(o)) {
    if (!KNOWN_OPTIONS.has(key)) throw new TypeError(`${where}.${key} is not a known option`)
  }
  return out
}

/** Most calls in one batch, and longest wait for more (a minute). */
const MAX_BATCH_SIZE = 10_000
const MAX_BATCH_WAIT_MS = 60_000

function checkBatch(value: unknown, where: string): BatchConfig {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(`${where} must be { maxSize, maxWaitMs }`)
  }
  const { maxSize, maxWaitMs, ...rest } = value as Record<string, unknown>
  const extra = Object.keys(rest)[0]
  if (extra !== undefined) throw new TypeError(`${where}.${extra} is not a known option`)
  if (typeof maxSize !== 'number' || !Number.isInteger(maxSize) || maxSize < 1 || maxSize > MAX_BATCH_SIZE) {
    throw new TypeError(`${where}.maxSize must be an integer from 1 to ${MAX_BATCH_SIZE}`)
  }
  const wait = maxWaitMs ?? 0
  if (typeof wait !== 'number' || !Number.isFinite(wait) || wait < 0 || wait > MAX_BATCH_WAIT_MS) {
    throw new TypeError(`${where}.maxWaitMs must be a number of ms from 0 to ${MAX_BATCH_WAIT_MS}`)
  }
  return { maxSize, maxWaitMs: wait }
}

function checkEvery(value: unknown, where: string): NonNullable<CallOptions['checkpointEvery']> {
  const count = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v > 0
  if (count(value) && Number.isInteger(value)) return value as number
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const { calls, seconds, ...rest } = value as Record<string, unknown>
    const ok =
      Object.keys(rest).length === 0 &&
      (calls === undefined || (count(calls) && Number.isInteger(calls))) &&
      (seconds === undefined || count(seconds)) &&
      (calls !== undefined || seconds !== undefined)
    if (ok)
      return {
        ...(calls === undefined ? {} : { calls: calls as number }),
        ...(seconds === undefined ? {} : { seconds: seconds as number }),
      }
  }
  throw new TypeError(`${where} must be a positive number of calls, or { calls, seconds }`)
}

function checkEnv(env: unknown, secrets: unknown, where: string, out: CallOptions): void {
  if (env !== undefined) {
    if (typeof env !== 'object' || env === null || Array.isArray(env))
      throw new TypeError(`${where}.env must be an object of strings`)
    for (const [k, v] of Object.entries(env)) {
      if (!VARIABLE_NAME.test(k))
        throw new TypeError(`${where}.env: ${JSON.stringify(k)} is not a variable name`)
      if (typeof v !== 'string') throw new TypeError(`${where}.env.${k} must be a string`)
    }
    out.env = { ...(env as Record<string, string>) }
  }
  if (secrets !== undefined) {
    if (!Array.isArray(secrets) || !secrets.every((s) => typeof s === 'string' && VARIABLE_NAME.test(s)))
      throw new TypeError(`${where}.secrets must be a list of secret names`)
    out.secrets = [...(secrets as string[])]
  }
}

/** Options an actor takes when it is made: a call of a function refuses them rather than ignore them. */
export const ACTOR_ONLY_OPTIONS = [
  'maxRestarts',
  'maxTaskRetries',
  'maxConcurrency',
  'checkpointEvery',
  'lifetime',
] as const

/** A function call's options: TypeError naming an actor's option, which would do nothing there. */
export function refuseActorOptions(options: CallOptions, where = 'options'): CallOptions {
  for (const key of ACTOR_ONLY_OPTIONS) {
    if (options[key] !== undefined) {
      throw new TypeError(
        `${where}.${key} is an option of actors (given when one is made), not of function calls`,
      )
    }
  }
  return options
}

const KNOWN_OPTIONS = new Set([
  'timeoutMs',
  'maxRetries',
  'retryExceptions',
  'retryDelayMs',
  'numCpus',
  'resources',
  'concurrency',
  'ttlS',
  'memoryMb',
  'env',
  'secrets',
  'batch',
  'maxRestarts',
  'maxTaskRetries',
  'maxConcurrency',
  'checkpointEvery',
  'lifetime',
])
