/**
 * Local mode: the client's API in this process, with no threads and no HTTP,
 * for debugging and unit tests (Ray's `local_mode`). Function folders are
 * imported as they are, so a stack trace points into their source; calls run
 * one at a time, in the order they were submitted; a call waiting in `get`
 * or `wait` lets the next one run, as a task gives its CPU back on a node.
 * Values travel encoded as they would between processes (JSON or bytes,
 * `$ref` and `$actor` markers), so what works here serializes there.
 */

import {
  type ActorHandle,
  type ActorOptions,
  actorHandle,
  type HandleIO,
  withActorHandles,
} from './actors.ts'
import { checkRef, type EncodedValue, encodeValue, newObjectId, ObjectRef, parseWithRefs } from './codec.ts'
import { fromEnv } from './env-vars.ts'
import {
  ActorDiedError,
  ActorNotFoundError,
  BadRequestError,
  FunctionNotFoundError,
  FunctionTimeoutError,
  GetTimeoutError,
  MagpieError,
  NameTakenError,
  ObjectNotFoundError,
  serializeError,
  TaskCancelledError,
  TaskError,
} from './errors.ts'
import { RUNTIME_KEY } from './runtime.ts'
import { type CallOptions, checkCallOptions, type WaitOptions, type WaitResult } from './types.ts'

/** A function folder's module, as `import()` gives it. */
export interface FunctionModule {
  default: unknown
  config?: Record<string, unknown>
}

export interface LocalOptions {
  /**
   * The functions: a folder of function folders (default `./functions`, or
   * `$MAGPIE_FUNCTIONS`), or their modules by name (or functions that import
   * them: `{ square: () => import('./functions/square/index.ts') }`).
   */
  functions?: string | Record<string, FunctionModule | (() => Promise<FunctionModule>)>
  /** Secrets a function's `config.secrets` may grant (default: none). */
  secrets?: Record<string, string>
}

const ENTRY_NAMES = ['index.ts', 'index.mts', 'index.js', 'index.mjs']

type State =
  | { status: 'pending' }
  | { status: 'ready'; value: EncodedValue }
  | { status: 'failed'; error: MagpieError }

interface Entry {
  state: State
  waiters: Set<() => void>
  function?: string
  attempts: number
  createdAt: string
  logs: string[]
  call?: Call
}

interface Call {
  id: string
  name: string
  args: readonly unknown[]
  options: CallOptions
  controller: AbortController
  env: Record<string, string>
  actor?: LocalActor
  method?: string
}

interface LocalActor {
  id: string
  cls: string
  name?: string
  state: 'pending' | 'alive' | 'dead'
  instance?: Record<string, unknown>
  mailbox: Call[]
  busy: number
  concurrency: number
}

/** What a call's run gave: the value, encoded as stored, or what it threw. */
type Outcome = { ok: true; value: EncodedValue } | { ok: false; error: unknown }

// ---- the one slot: calls of every local client in this process run one at a time ----

/**
 * A call's place in line for the slot, taken when it is submitted:
 * `loading` (its code is being imported) holds back those behind it, so
 * that calls run in submission order; `blocked` (its arguments are not
 * ready) lets them pass, since what it waits for may be behind it.
 */
interface Turn {
  engine: LocalEngine
  call: Call
  phase: 'loading' | 'blocked' | 'ready'
  grant: () => void
  granted: Promise<void>
}

const slot: { holder: Turn | undefined; queue: Turn[] } = { holder: undefined, queue: [] }

/**
 * A module of Node's (Deno and Bun have them too), loaded only in local mode:
 * named at run time, so that a bundler for browsers leaves it alone.
 */
function nodeModule(name: string): Promise<unknown> {
  return import(/* @vite-ignore */ name)
}

/** The call whose code runs, followed across its awaits where the runtime can (AsyncLocalStorage). */
interface Running {
  engine: LocalEngine
  call: Call
}
let storage: { getStore(): Running | undefined; run<R>(store: Running, fn: () => R): R } | undefined
let storageLoading: Promise<void> | undefined
function loadStorage(): Promise<void> {
  storageLoading ??= nodeModule('node:async_hooks').then(
    (m) => {
      storage = new (m as typeof import('node:async_hooks')).AsyncLocalStorage<Running>()
    },
    () => {},
  )
  return storageLoading
}
function running(): Running | undefined {
  return storage ? storage.getStore() : slot.holder
}

/** Takes a place in line: at the back, or (a call coming back from `get`) at the front. */
function reserve(engine: LocalEngine, call: Call, phase: Turn['phase'], front = false): Turn {
  let grant = () => {}
  const granted = new Promise<void>((resolve) => {
    grant = resolve
  })
  const turn: Turn = { engine, call, phase, grant, granted }
  if (front) slot.queue.unshift(turn)
  else slot.queue.push(turn)
  handOn()
  return turn
}

function acquire(engine: LocalEngine, call: Call, front = false): Promise<void> {
  return reserve(engine, call, 'ready', front).granted
}

function setPhase(turn: Turn, phase: Turn['phase']): void {
  turn.phase = phase
  handOn()
}

/** Leaves the line without running (the call failed before it could). */
function drop(turn: Turn): void {
  const at = slot.queue.indexOf(turn)
  if (at >= 0) slot.queue.splice(at, 1)
  handOn()
}

function release(call: Call): void {
  if (slot.holder?.call !== call) return
  slot.holder = undefined
  handOn()
}

function handOn(): void {
  if (slot.holder) return
  for (let i = 0; i < slot.queue.length; i++) {
    const turn = slot.queue[i] as Turn
    if (turn.phase === 'blocked') continue
    if (turn.phase === 'loading') return
    slot.queue.splice(i, 1)
    slot.holder = turn
    turn.grant()
    return
  }
}

/** Runs `wait` with the slot given up meanwhile, then takes it back before the caller goes on. */
async function yieldingSlot<T>(wait: () => Promise<T>): Promise<T> {
  const holder = running()
  // The driver's own code (no call of its own), or a call that does not hold the slot: nothing to give up.
  if (!holder || slot.holder?.call !== holder.call) return wait()
  release(holder.call)
  try {
    return await wait()
  } finally {
    await acquire(holder.engine, holder.call, true)
  }
}

// ---- console capture: what a call writes is kept as its logs (and still printed) ----

let consolePatched = false
function captureConsole(): void {
  if (consolePatched) return
  consolePatched = true
  for (const level of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    const original = console[level].bind(console)
    console[level] = (...args: unknown[]) => {
      const now = running()
      now?.engine.logLine(now.call.id, args.map(show).join(' '))
      original(...args)
    }
  }
}

function show(value: unknown): string {
  if (typeof value === 'string') return value
  if (value instanceof Error) return value.stack ?? String(value)
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

// ---- the engine ----

export class LocalEngine {
  readonly #options: LocalOptions
  readonly #objects = new Map<string, Entry>()
  readonly #modules = new Map<string, Promise<FunctionModule>>()
  readonly #actors = new Map<string, LocalActor>()
  readonly #names = new Map<string, string>()
  /** Actor calls a handle has queued and not yet handed over (it sends them a turn later, in order). */
  readonly #submissions = new Map<string, Promise<unknown>>()

  constructor(options: LocalOptions = {}) {
    this.#options = options
    installRuntime()
    captureConsole()
  }

  logLine(id: string, line: string): void {
    const entry = this.#objects.get(id)
    if (entry) for (const l of line.split('\n')) entry.logs.push(l)
    this.#wake(id)
  }

  // ---- functions ----

  async #module(name: string): Promise<FunctionModule> {
    let loading = this.#modules.get(name)
    if (!loading) {
      loading = this.#import(name)
      this.#modules.set(name, loading)
      loading.catch(() => this.#modules.delete(name))
    }
    return loading
  }

  async #import(name: string): Promise<FunctionModule> {
    const functions =
      this.#options.functions ??
      fromEnv('MAGPIE_FUNCTIONS') ??
      fromEnv('MAGPIE_FUNCTIONS_DIR') ??
      './functions'
    if (typeof functions !== 'string') {
      const module = Object.hasOwn(functions, name) ? functions[name] : undefined
      if (!module) throw new FunctionNotFoundError(`no function named ${name}`)
      return typeof module === 'function' ? await module() : module
    }
    if (!/^[a-z][a-z0-9-]{0,62}$/.test(name)) throw new FunctionNotFoundError(`no function named ${name}`)
    const { existsSync } = (await nodeModule('node:fs')) as typeof import('node:fs')
    const { resolve, join } = (await nodeModule('node:path')) as typeof import('node:path')
    const { pathToFileURL } = (await nodeModule('node:url')) as typeof import('node:url')
    const dir = resolve(functions, name)
    const entry = ENTRY_NAMES.map((f) => join(dir, f)).find((f) => existsSync(f))
    if (!entry) throw new FunctionNotFoundError(`no function named ${name} in ${resolve(functions)}`)
    try {
      return (await import(pathToFileURL(entry).href)) as FunctionModule
    } catch (err) {
      const message = (err as Error).message
      if (/Unknown file extension/.test(message)) {
        throw new MagpieError(
          `cannot import ${entry}: local mode imports a function's source as it is; run TypeScript under tsx, vitest, Deno or Bun`,
        )
      }
      throw err
    }
  }

  submit(name: string, args: readonly unknown[], options: CallOptions, id = newObjectId()): ObjectRef {
    const call = this.#newCall(id, name, args, options)
    void this.#runTask(call, reserve(this, call, 'loading'))
    return new ObjectRef(id)
  }

  #newCall(id: string, name: string, args: readonly unknown[], options: CallOptions): Call {
    if (this.#objects.has(id)) throw new BadRequestError(`object ${id} exists already`)
    // Arguments are taken as they are now, encoded as they would travel.
    const encoded = args.map((a) => (a instanceof ObjectRef ? a : encodeValue(a)))
    const call: Call = {
      id,
      name,
      args: encoded,
      options,
      controller: new AbortController(),
      env: {},
    }
    this.#objects.set(id, {
      state: { status: 'pending' },
      waiters: new Set(),
      function: name,
      attempts: 0,
      createdAt: new Date().toISOString(),
      logs: [],
      call,
    })
    return call
  }

  async #runTask(call: Call, turn: Turn): Promise<void> {
    let module: FunctionModule
    let args: unknown[]
    try {
      await loadStorage()
      module = await this.#module(call.name)
      if (typeof module.default !== 'function') throw new BadRequestError(`${call.name} exports no function`)
      if (isClass(module.default)) {
        throw new BadRequestError(
          `${call.name} is an actor class: make an actor of it with actor('${call.name}')`,
        )
      }
      args = await this.#arguments(call.args, turn)
    } catch (err) {
      drop(turn)
      this.#fail(call.id, err)
      return
    }
    const config = { ...(module.config ?? {}) }
    const options = { ...pickOptions(config), ...call.options }
    call.env = this.#envOf(config)
    const fn = batchOfOne(
      call.name,
      module.default as (...a: unknown[]) => unknown,
      config.batch !== undefined,
    )
    const retries = options.retryExceptions === true ? (options.maxRetries ?? 3) : 0
    setPhase(turn, 'ready')
    for (let attempt = 0; ; attempt++) {
      const granted = attempt === 0 ? turn.granted : acquire(this, call)
      const outcome = await this.#turn(call, granted, attempt + 1, () => fn(...args), options.timeoutMs)
      if (!outcome) return
      if (outcome.ok) {
        this.#settle(call.id, outcome.value)
        return
      }
      if (attempt >= retries || outcome.error instanceof MagpieError) {
        this.#fail(call.id, outcome.error, attempt + 1)
        return
      }
    }
  }

  /**
   * Once `granted` the slot, runs `body` as `call` (its `attempts`-th run)
   * and gives the slot back; undefined if the call settled meanwhile
   * (cancelled, or its client reset).
   */
  async #turn(
    call: Call,
    granted: Promise<void>,
    attempts: number,
    body: () => unknown,
    timeoutMs?: number,
  ): Promise<Outcome | undefined> {
    await granted
    const entry = this.#objects.get(call.id)
    if (entry?.state.status !== 'pending') {
      release(call)
      return undefined
    }
    entry.attempts = attempts
    const outcome = await this.#invoke(call, body, timeoutMs)
    release(call)
    return outcome
  }

  /** Runs `body` as `call`, bounded by its timeout; the value stored, or what it threw. */
  async #invoke(call: Call, body: () => unknown, timeoutMs: number | undefined): Promise<Outcome> {
    let timer: ReturnType<typeof setTimeout> | undefined
    try {
      const run = Promise.resolve().then(() => (storage ? storage.run({ engine: this, call }, body) : body()))
      const bounded =
        timeoutMs === undefined
          ? run
          : Promise.race([
              run,
              new Promise((_, reject) => {
                timer = setTimeout(() => {
                  call.controller.abort()
                  reject(new FunctionTimeoutError(`${call.name} ran past its timeout of ${timeoutMs} ms`))
                }, timeoutMs)
              }),
            ])
      const cancelled = new Promise((_, reject) => {
        call.controller.signal.addEventListener('abort', () =>
          reject(new TaskCancelledError(`call ${call.id} was cancelled`)),
        )
      })
      const value = await Promise.race([bounded, cancelled])
      return { ok: true, value: copyOf(encodeValue(value)) }
    } catch (error) {
      return { ok: false, error }
    } finally {
      if (timer) clearTimeout(timer)
    }
  }

  /**
   * Top-level refs become their values (waited for first: the call's turn
   * lets others pass meanwhile); the rest is decoded as it would arrive.
   */
  async #arguments(args: readonly unknown[], turn?: Turn): Promise<unknown[]> {
    const refs = args.filter((a): a is ObjectRef => a instanceof ObjectRef)
    if (turn && refs.some((r) => this.#objects.get(r.id)?.state.status !== 'ready')) setPhase(turn, 'blocked')
    await this.#submitted(refs.map((r) => r.id))
    if (refs.length > 0)
      await this.#settled(
        refs.map((r) => r.id),
        Number.POSITIVE_INFINITY,
      )
    return args.map((a) => (a instanceof ObjectRef ? this.#value(a.id) : this.#decode(a as EncodedValue)))
  }

  #envOf(config: Record<string, unknown>): Record<string, string> {
    const env: Record<string, string> = { ...((config.env as Record<string, string>) ?? {}) }
    const secrets = this.#options.secrets ?? {}
    for (const name of (config.secrets as string[] | undefined) ?? []) {
      if (Object.hasOwn(secrets, name)) env[name] = secrets[name] as string
    }
    return env
  }

  // ---- objects ----

  put(value: unknown): ObjectRef {
    const id = newObjectId()
    this.#objects.set(id, {
      state: { status: 'ready', value: copyOf(encodeValue(value)) },
      waiters: new Set(),
      attempts: 0,
      createdAt: new Date().toISOString(),
      logs: [],
    })
    return new ObjectRef(id)
  }

  /** Waits until the calls of `ids` queued by actor handles are handed over. */
  async #submitted(ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      const pending = this.#submissions.get(id)
      if (pending) await pending
    }
  }

  #entry(id: string): Entry {
    const entry = this.#objects.get(id)
    if (!entry) throw new ObjectNotFoundError(`no object ${id}`)
    return entry
  }

  #settle(id: string, value: EncodedValue): void {
    const entry = this.#objects.get(id)
    if (entry?.state.status !== 'pending') return
    entry.state = { status: 'ready', value }
    this.#wake(id)
  }

  #fail(id: string, thrown: unknown, attempts?: number): void {
    const entry = this.#objects.get(id)
    if (entry?.state.status !== 'pending') return
    let error: MagpieError
    if (thrown instanceof MagpieError) error = thrown
    else {
      const plain = serializeError(thrown)
      error = new TaskError(
        {
          name: plain.name ?? 'Error',
          message: plain.message,
          ...(plain.stack ? { stack: plain.stack } : {}),
        },
        attempts === undefined ? {} : { attempts },
      )
      // The stack of what was thrown, in this process: it points into the function's source.
      if (thrown instanceof Error && thrown.stack)
        error.stack = `${error.name}: ${error.message}\n${thrown.stack}`
    }
    entry.state = { status: 'failed', error }
    entry.call?.controller.abort()
    this.#wake(id)
  }

  #wake(id: string): void {
    const entry = this.#objects.get(id)
    if (!entry) return
    for (const w of [...entry.waiters]) w()
  }

  #decode(value: EncodedValue): unknown {
    // Bytes are shared, not copied, as a node shares them between calls (a function must not change its arguments).
    if (value.kind === 'bytes') return value.bytes
    const decoded = parseWithRefs(value.text)
    return value.text.includes('"$actor"') ? withActorHandles(decoded, (id) => this.handle(id)) : decoded
  }

  /** The value of a settled object; its error if it failed. */
  #value(id: string): unknown {
    const { state } = this.#entry(id)
    if (state.status === 'failed') throw state.error
    if (state.status === 'pending') throw new MagpieError(`object ${id} is not ready`)
    return this.#decode(state.value)
  }

  /** Resolves once each of `ids` has settled, or `count` of them; GetTimeoutError at the deadline. */
  #settled(ids: readonly string[], deadline: number, count = ids.length): Promise<void> {
    const entries = ids.map((id) => this.#entry(id))
    const done = () => entries.filter((e) => e.state.status !== 'pending').length >= count
    if (done()) return Promise.resolve()
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined
      const check = () => {
        if (!done()) return
        finish()
        resolve()
      }
      const finish = () => {
        if (timer) clearTimeout(timer)
        for (const e of entries) e.waiters.delete(check)
      }
      for (const e of entries) e.waiters.add(check)
      if (Number.isFinite(deadline)) {
        timer = setTimeout(
          () => {
            finish()
            reject(new GetTimeoutError(`${ids.length} objects not ready in time`))
          },
          Math.max(0, deadline - Date.now()),
        )
      }
    })
  }

  async get(refOrRefs: unknown, timeoutS?: number): Promise<unknown> {
    const deadline = timeoutS === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeoutS * 1000
    const list = Array.isArray(refOrRefs) ? refOrRefs : [refOrRefs]
    const ids = list.map((r) => checkRef(r as ObjectRef).id)
    await this.#submitted(ids)
    const ready = ids.every((id) => this.#entry(id).state.status !== 'pending')
    if (!ready) await yieldingSlot(() => this.#settled(ids, deadline))
    const values = ids.map((id) => this.#value(id))
    return Array.isArray(refOrRefs) ? values : values[0]
  }

  async wait<T>(refs: readonly ObjectRef<T>[], options: WaitOptions = {}): Promise<WaitResult<T>> {
    if (!Array.isArray(refs)) throw new TypeError('refs must be an array of ObjectRefs')
    const ids = refs.map((r) => checkRef(r as ObjectRef).id)
    if (new Set(ids).size !== ids.length) throw new BadRequestError('wait got the same ref twice')
    const numReturns = options.numReturns ?? Math.min(1, ids.length)
    if (!Number.isInteger(numReturns) || numReturns < 0 || numReturns > ids.length) {
      throw new BadRequestError(`numReturns must be an integer from 0 to ${ids.length}`)
    }
    await this.#submitted(ids)
    const deadline =
      options.timeout === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeout * 1000
    await yieldingSlot(() => this.#settled(ids, deadline, numReturns)).catch((err: unknown) => {
      if (!(err instanceof GetTimeoutError)) throw err
    })
    const ready: ObjectRef<T>[] = []
    const pending: ObjectRef<T>[] = []
    for (const r of refs) {
      const settled = this.#entry(r.id).state.status !== 'pending'
      if (settled && ready.length < numReturns) ready.push(r)
      else pending.push(r)
    }
    return { ready, pending }
  }

  /** Yields each id of `ids` as it settles; a failure is thrown, or with `failures: 'yield'` yielded as the third item. */
  async *asCompleted(
    ids: readonly string[],
    timeoutS?: number,
    failures: 'throw' | 'yield' = 'throw',
  ): AsyncGenerator<[string, unknown, MagpieError?]> {
    const deadline = timeoutS === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeoutS * 1000
    await this.#submitted(ids)
    const left = new Set(ids)
    while (left.size > 0) {
      await this.#settled([...left], deadline, 1)
      for (const id of [...left]) {
        if (this.#entry(id).state.status === 'pending') continue
        left.delete(id)
        const { state } = this.#entry(id)
        if (state.status === 'failed' && failures === 'yield') yield [id, undefined, state.error]
        else yield [id, this.#value(id)]
      }
    }
  }

  free(id: string): void {
    this.#objects.delete(id)
  }

  async cancel(id: string): Promise<void> {
    await this.#submitted([id])
    const entry = this.#entry(id)
    if (entry.state.status !== 'pending') return
    this.#fail(id, new TaskCancelledError(`call ${id} was cancelled`))
  }

  async meta(id: string): Promise<Record<string, unknown>> {
    await this.#submitted([id])
    const entry = this.#entry(id)
    const { state } = entry
    const out: Record<string, unknown> = {
      id,
      status: state.status,
      node: 'local',
      attempts: entry.attempts,
      createdAt: entry.createdAt,
    }
    if (entry.function) out.function = entry.function
    if (state.status === 'ready') {
      out.size = state.value.kind === 'json' ? state.value.text.length : state.value.bytes.byteLength
      out.contentType = state.value.kind === 'json' ? 'application/json' : 'application/octet-stream'
    }
    if (state.status === 'failed') out.error = state.error.toJSON()
    return out
  }

  /** The lines a call wrote; with `follow`, the ones to come too, until it settles. */
  async *logs(id: string, follow: boolean): AsyncGenerator<string> {
    await this.#submitted([id])
    const entry = this.#entry(id)
    let sent = 0
    for (;;) {
      while (sent < entry.logs.length) yield entry.logs[sent++] as string
      if (!follow || entry.state.status !== 'pending') return
      await new Promise<void>((resolve) => {
        const wake = () => {
          entry.waiters.delete(wake)
          resolve()
        }
        entry.waiters.add(wake)
      })
    }
  }

  /** What the running call reports (the tuner reads it as a line of its logs). */
  report(line: string): void {
    const now = running()
    if (now?.engine === this) this.logLine(now.call.id, line)
  }

  // ---- actors ----

  makeActor(
    cls: string,
    args: readonly unknown[],
    options: ActorOptions,
  ): { id: string; ready: Promise<string> } {
    const { name, getIfExists, lifetime: _lifetime, ...callOptions } = options
    if (name !== undefined) {
      const existing = this.#names.get(name)
      if (existing) {
        if (getIfExists) return { id: existing, ready: Promise.resolve(existing) }
        const ready = Promise.reject(new NameTakenError(`an actor named ${name} is alive`))
        ready.catch(() => {})
        return { id: existing, ready }
      }
    }
    const id = newObjectId()
    const actor: LocalActor = { id, cls, state: 'pending', mailbox: [], busy: 0, concurrency: 1 }
    if (name !== undefined) {
      actor.name = name
      this.#names.set(name, id)
    }
    this.#actors.set(id, actor)
    const call = this.#newCall(id, cls, args, callOptions)
    call.actor = actor
    void this.#construct(actor, call, reserve(this, call, 'loading'))
    return { id, ready: Promise.resolve(id) }
  }

  async #construct(actor: LocalActor, call: Call, turn: Turn): Promise<void> {
    let cls: new (...a: unknown[]) => Record<string, unknown>
    let args: unknown[]
    let config: Record<string, unknown>
    try {
      await loadStorage()
      const module = await this.#module(actor.cls)
      if (!isClass(module.default)) throw new BadRequestError(`${actor.cls} is not an actor class`)
      cls = module.default as typeof cls
      config = { ...(module.config ?? {}) }
      args = await this.#arguments(call.args, turn)
    } catch (err) {
      drop(turn)
      this.#fail(call.id, err)
      this.#die(actor, `actor ${actor.id} was never made: ${(err as Error).message}`)
      return
    }
    const options = { ...pickOptions(config), ...call.options }
    actor.concurrency = Math.max(1, Number(options.maxConcurrency ?? config.maxConcurrency ?? 1))
    call.env = this.#envOf(config)
    setPhase(turn, 'ready')
    const outcome = await this.#turn(call, turn.granted, 1, () => {
      actor.instance = new cls(...args)
      return actor.id
    })
    if (!outcome) return
    if (!outcome.ok) {
      this.#fail(call.id, outcome.error, 1)
      this.#die(actor, `the constructor of ${actor.cls} threw: ${(outcome.error as Error)?.message}`)
      return
    }
    this.#settle(call.id, outcome.value)
    if (actor.state === 'pending') actor.state = 'alive'
    this.#pump(actor)
  }

  callMethod(actorId: string, method: string, args: readonly unknown[], id: string): void {
    const actor = this.#actors.get(actorId)
    if (!actor) throw new ActorNotFoundError(`no actor ${actorId}`)
    const call = this.#newCall(id, actor.cls, args, {})
    call.actor = actor
    call.method = method
    if (actor.state === 'dead') {
      this.#fail(id, new ActorDiedError(`actor ${actor.id} is dead`))
      return
    }
    actor.mailbox.push(call)
    this.#pump(actor)
  }

  #pump(actor: LocalActor): void {
    while (actor.state === 'alive' && actor.busy < actor.concurrency && actor.mailbox.length > 0) {
      const call = actor.mailbox.shift() as Call
      actor.busy++
      void this.#runMethod(actor, call, reserve(this, call, 'loading')).finally(() => {
        actor.busy--
        this.#pump(actor)
      })
    }
  }

  async #runMethod(actor: LocalActor, call: Call, turn: Turn): Promise<void> {
    const method = call.method as string
    const m = actor.instance?.[method]
    if (
      typeof m !== 'function' ||
      method === 'constructor' ||
      method.startsWith('_') ||
      method.startsWith('#')
    ) {
      drop(turn)
      this.#fail(call.id, new MagpieError(`actor ${actor.id} has no method ${method}`, { code: 'NOT_FOUND' }))
      return
    }
    let args: unknown[]
    try {
      args = await this.#arguments(call.args, turn)
    } catch (err) {
      drop(turn)
      this.#fail(call.id, err)
      return
    }
    call.env = this.#objects.get(actor.id)?.call?.env ?? {}
    setPhase(turn, 'ready')
    const outcome = await this.#turn(call, turn.granted, 1, () =>
      (m as (...a: unknown[]) => unknown).apply(actor.instance, args),
    )
    if (!outcome) return
    if (outcome.ok) this.#settle(call.id, outcome.value)
    else this.#fail(call.id, outcome.error, 1)
  }

  #die(actor: LocalActor, why: string): void {
    actor.state = 'dead'
    if (actor.name !== undefined && this.#names.get(actor.name) === actor.id) this.#names.delete(actor.name)
    for (const call of actor.mailbox.splice(0)) this.#fail(call.id, new ActorDiedError(why))
  }

  kill(actorId: string): void {
    const actor = this.#actors.get(actorId)
    if (!actor) throw new ActorNotFoundError(`no actor ${actorId}`)
    this.#die(actor, `actor ${actorId} was killed`)
  }

  findActor(nameOrId: string): string {
    const id = this.#names.get(nameOrId) ?? nameOrId
    const actor = this.#actors.get(id)
    if (!actor || actor.state === 'dead') throw new ActorNotFoundError(`no live actor ${nameOrId}`)
    return id
  }

  readonly handleIO: HandleIO = {
    newId: () => newObjectId(),
    track: (id, accepted) => {
      const done = accepted.then(
        () => this.#submissions.delete(id),
        () => this.#submissions.delete(id),
      )
      this.#submissions.set(id, done)
    },
    sendCalls: async (actorId, calls) => {
      for (const c of calls) this.callMethod(actorId, c.method, c.args, c.id)
    },
  }

  handle<T>(id: string, ready: Promise<string> = Promise.resolve(id)): ActorHandle<T> {
    return actorHandle<T>(id, ready, this.handleIO)
  }

  /** The call whose code runs now, if it is one of this engine's. */
  current(): Call | undefined {
    const now = running()
    return now?.engine === this ? now.call : undefined
  }

  /** Ends what is queued and forgets everything: the next test starts clean. */
  reset(): void {
    for (const actor of this.#actors.values())
      this.#die(actor, `actor ${actor.id} ended with its local client`)
    for (const [id, entry] of this.#objects) {
      if (entry.state.status === 'pending')
        this.#fail(id, new TaskCancelledError('the local client was reset'))
    }
    slot.queue = slot.queue.filter((t) => t.engine !== this)
    this.#objects.clear()
    this.#actors.clear()
    this.#names.clear()
    this.#submissions.clear()
  }
}

// ---- the in-function API, bound to the engine whose call runs ----

let runtimeInstalled = false
function installRuntime(): void {
  if (runtimeInstalled) return
  const global = globalThis as { [RUNTIME_KEY]?: unknown }
  // A worker thread of a node has its own: local mode never replaces it.
  if (global[RUNTIME_KEY]) return
  runtimeInstalled = true
  const engine = (): LocalEngine => {
    const holder = running()
    if (!holder) {
      throw new MagpieError(
        'remote, get, put and wait from magpie work inside a function run by magpie; use connect() elsewhere',
      )
    }
    return holder.engine
  }
  global[RUNTIME_KEY] = {
    remote: (name: string, options: CallOptions = {}) => {
      const e = engine()
      const remoteFn = {
        name,
        remote: (...args: unknown[]) => e.submit(name, args, checkCallOptions(options, 'options')),
        options: (more: CallOptions) => runtimeRemote(name, { ...options, ...more }),
      }
      return remoteFn
    },
    get: (refOrRefs: unknown, options: { timeout?: number } = {}) => engine().get(refOrRefs, options.timeout),
    put: async (value: unknown) => engine().put(value),
    wait: (refs: readonly ObjectRef[], options?: WaitOptions) => engine().wait(refs, options),
    cancel: (ref: ObjectRef) =>
      void engine()
        .cancel(checkRef(ref as ObjectRef).id)
        .catch(() => {}),
    signal: () => {
      const call = engine().current()
      return call?.controller.signal ?? new AbortController().signal
    },
    env: () => engine().current()?.env ?? {},
    actor: (cls: string, options: ActorOptions = {}) => {
      const e = engine()
      return {
        name: cls,
        remote: (...args: unknown[]) => {
          const { id, ready } = e.makeActor(cls, args, options)
          return e.handle(id, ready)
        },
        options: (more: ActorOptions) =>
          (global[RUNTIME_KEY] as { actor: (c: string, o: ActorOptions) => unknown }).actor(cls, {
            ...options,
            ...more,
          }),
      }
    },
    getActor: async (nameOrId: string) => {
      const e = engine()
      return e.handle(e.findActor(nameOrId))
    },
    report: (line: string) => engine().report(line),
  }
  const runtimeRemote = (name: string, options: CallOptions) =>
    (global[RUNTIME_KEY] as { remote: (n: string, o: CallOptions) => unknown }).remote(name, options)
}

/** A batched function (`config.batch`) takes one call's argument as a batch of one, and answers its one item. */
function batchOfOne(
  name: string,
  fn: (...a: unknown[]) => unknown,
  batched: boolean,
): (...a: unknown[]) => unknown {
  if (!batched) return fn
  return async (...args: unknown[]) => {
    if (args.length !== 1) {
      throw new BadRequestError(
        `${name} batches its calls: each call takes exactly one argument (got ${args.length})`,
      )
    }
    const out = await fn([args[0]])
    if (!Array.isArray(out) || out.length !== 1) {
      throw new TypeError(
        `${name} batches its calls: it returned ${Array.isArray(out) ? `${out.length} items` : 'no array'} for 1 calls (one per call, in order)`,
      )
    }
    return out[0]
  }
}

function copyOf(value: EncodedValue): EncodedValue {
  return value.kind === 'bytes' ? { kind: 'bytes', bytes: value.bytes.slice() } : value
}

function isClass(value: unknown): boolean {
  return typeof value === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(value))
}

const OPTION_NAMES = ['timeoutMs', 'maxRetries', 'retryExceptions', 'maxConcurrency'] as const
function pickOptions(config: Record<string, unknown>): CallOptions {
  const out: Record<string, unknown> = {}
  for (const k of OPTION_NAMES) if (config[k] !== undefined) out[k] = config[k]
  return out as CallOptions
}
