/**
 * A worker thread of a node: runs the tasks the scheduler hands it, and serves
 * the in-function API (`remote`, `get`, `put`, `wait`) by messages to the
 * scheduler. A task waiting in `get` leaves the thread free for other tasks.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads'
import { encodeValue } from '../../sdk/codec.ts'
import { ActorDiedError, MagpieError, serializeError, TaskCancelledError } from '../../sdk/errors.ts'
import { type FunctionRuntime, RUNTIME_KEY } from '../../sdk/runtime.ts'
import type { AnyFunction } from '../../sdk/types.ts'
import { waitForRoom } from '../room.ts'
import { createFunctionRuntime, decodeArg } from './function-runtime.ts'
import type { FromWorker, Outcome, RunTask, ToWorker, WorkerData } from './messages.ts'
import { boundCallOutput, type Writer } from './output-bound.ts'
import { RefTracker } from './ref-tracker.ts'
import { toShared } from './shared-bytes.ts'

if (!parentPort) throw new Error('node/worker/main.ts runs as a worker thread')
const port = parentPort
const data = workerData as WorkerData

/** A task while it runs here: how many of its gets/waits are outstanding. */
interface Running {
  task: RunTask
  startedAt: number
  waiting: number
  done: boolean
  /** Aborted when the call is cancelled: `signal()` inside the function. */
  controller: AbortController
  /** What it wrote to stdout and stderr (bounded: see output-bound.ts). */
  output: Writer
}

const context = new AsyncLocalStorage<Running>()
/** What `env` reads outside a call, or in a call whose function has no variables. */
const NO_ENV: Readonly<Record<string, string>> = Object.freeze({})
boundCallOutput(
  data.maxCallOutput,
  () => context.getStore()?.output,
  (call, stream, text) => {
    send({ type: 'log', id: call.id, fn: call.fn, stream, text, t: Date.now() })
    // A call that prints and goes on computing: its lines leave at least every LOG_FLUSH_MS.
    if (performance.now() - flushedAt > LOG_FLUSH_MS) flush()
  },
)
let names = new Set(data.names)
const modules = new Map<string, AnyFunction>()
/** Tasks started here and not finished, by id. */
const started = new Map<string, Running>()
const queue: RunTask[] = []
/** Tasks handed here and cancelled before they started: they never start. */
const cancelledBeforeStart = new Set<string>()
let queueHead = 0
/** CPU share of the tasks running here and not waiting on magpie. */
let active = 0
let pumping = false

// ---- outgoing messages, batched until the current turn ends ----

let outbox: FromWorker[] = []
let flushQueued = false
/**
 * Messages wait for the end of the turn, to travel in one batch, unless the
 * next call is expected to take longer than this: then they go before it starts.
 */
const BATCH_WINDOW_MS = 0.2
/** Moving average of run times in ms, by function. */
const durations = new Map<string, number>()

/** Nested calls wait in the outbox at most this many at a time, so that the node sees a long fan-out as it grows. */
const SUBMITS_PER_BATCH = 32
let submitsInOutbox = 0

function send(message: FromWorker): void {
  outbox.push(message)
  if (message.type === 'submit' && ++submitsInOutbox >= SUBMITS_PER_BATCH) flush()
  else if (!flushQueued) {
    flushQueued = true
    queueMicrotask(flush)
  }
}

/** When the outbox last went out, and how long a call's lines may wait in it at most. */
let flushedAt = 0
const LOG_FLUSH_MS = 50

function flush(): void {
  flushedAt = performance.now()
  flushQueued = false
  submitsInOutbox = 0
  if (outbox.length === 0) return
  const batch = outbox
  outbox = []
  port.postMessage(batch)
}

// ---- requests that wait for the scheduler's answer ----

let nextReq = 1
const replies = new Map<number, (message: ToWorker) => void>()

function request(make: (req: number) => FromWorker): Promise<ToWorker> {
  const running = context.getStore()
  if (running && running.waiting++ === 0) {
    active -= running.task.weight
    queueMicrotask(pump)
  }
  const req = nextReq++
  return new Promise((resolve) => {
    replies.set(req, (reply) => {
      if (running && --running.waiting === 0 && !running.done) active += running.task.weight
      resolve(reply)
    })
    send(make(req))
  })
}

// ---- the in-function API ----

const refs = new RefTracker(send)
const runtime = createFunctionRuntime({
  refs,
  send,
  request,
  currentTask: () => context.getStore()?.task.id ?? null,
  currentSignal: () => context.getStore()?.controller.signal,
  currentEnv: () => context.getStore()?.task.env ?? NO_ENV,
  knows: (ref) => names.has(ref.split('@')[0] as string),
  idPrefix: data.idPrefix,
  room: () => waitForRoom(data.room, data.threads, data.index, flush),
})
;(globalThis as { [RUNTIME_KEY]?: FunctionRuntime })[RUNTIME_KEY] = runtime

// ---- running tasks ----

function pump(): void {
  if (pumping) return
  pumping = true
  try {
    for (;;) {
      if (active >= 0.999) break
      if (queueHead === queue.length) receivePending()
      if (queueHead === queue.length) break
      const task = queue[queueHead] as RunTask
      queue[queueHead++] = undefined as unknown as RunTask
      if (queueHead === queue.length) {
        queue.length = 0
        queueHead = 0
      }
      // Nothing waits behind a long call: what is queued goes out before it starts.
      if (outbox.length > 0 && (durations.get(task.fn) ?? Number.POSITIVE_INFINITY) > BATCH_WINDOW_MS) flush()
      start(task)
    }
  } finally {
    pumping = false
  }
}

/**
 * An actor's calls come in their order, maybe many at once: each actor runs
 * up to its concurrency of them at a time, the rest wait here, in order.
 */
const actorRunning = new Map<string, number>()
/** Calls of each actor since its last checkpoint, and when that was. */
const sinceCheckpoint = new Map<string, { calls: number; at: number }>()

/** After a call of an actor whose class can checkpoint: its state goes to the node every N calls or T seconds. */
function checkpointed(id: string, every: NonNullable<RunTask['actor']>['checkpointEvery']): void {
  if (!every) return
  const instance = actors.get(id)
  if (!instance || typeof instance.checkpoint !== 'function') return
  const { calls: everyCalls, seconds } =
    typeof every === 'number' ? { calls: every, seconds: undefined } : every
  const since = sinceCheckpoint.get(id) ?? { calls: 0, at: performance.now() }
  since.calls += 1
  sinceCheckpoint.set(id, since)
  const due =
    (everyCalls !== undefined && since.calls >= everyCalls) ||
    (seconds !== undefined && performance.now() - since.at >= seconds * 1000)
  if (!due) return
  sinceCheckpoint.set(id, { calls: 0, at: performance.now() })
  try {
    const state = encodeValue((instance.checkpoint as AnyFunction).call(instance))
    send({
      type: 'checkpoint',
      actor: id,
      state: state.kind === 'bytes' ? { kind: 'bytes', bytes: toShared(state.bytes) } : state,
    })
  } catch (err) {
    console.error(`magpie: actor ${id} could not checkpoint: ${(err as Error).message}`)
  }
}
const actorWaiting = new Map<string, RunTask[]>()

function start(task: RunTask): void {
  if (cancelledBeforeStart.delete(task.id)) {
    const error = serializeError(new TaskCancelledError(`call ${task.id} was cancelled before it started`))
    send({ type: 'done', id: task.id, outcome: { error }, ms: 0 })
    return
  }
  const actor = task.actor
  if (actor && actor.method !== null) {
    const busy = actorRunning.get(actor.id) ?? 0
    if (busy >= (actor.concurrency ?? 1)) {
      const waiting = actorWaiting.get(actor.id)
      if (waiting) waiting.push(task)
      else actorWaiting.set(actor.id, [task])
      return
    }
    actorRunning.set(actor.id, busy + 1)
  }
  refs.busy()
  active += task.weight
  const running: Running = {
    task,
    startedAt: performance.now(),
    waiting: 0,
    done: false,
    controller: new AbortController(),
    output: { id: task.id, fn: task.fn, written: 0, cut: false },
  }
  started.set(task.id, running)
  if (task.timed) {
    // Sent now: a call that blocks the thread must still have its clock running.
    send({ type: 'started', id: task.id })
    flush()
  }
  const fn = modules.get(task.url)
  if (!fn) {
    load(task.url).then(
      () => context.run(running, () => call(running)),
      (err: unknown) => finish(running, { error: serializeError(err) }),
    )
    return
  }
  context.run(running, () => call(running))
}

/** The actors this thread holds, by id. */
const actors = new Map<string, Record<string, unknown>>()

/** Runs an actor's constructor (keeping the instance) or one of its methods. */
function callActor(task: RunTask, fn: AnyFunction, args: unknown[]): unknown {
  const { id, method, restore } = task.actor as NonNullable<RunTask['actor']>
  if (method === null) {
    const instance = new (fn as unknown as new (...a: unknown[]) => Record<string, unknown>)(...args)
    actors.set(id, instance)
    // Made again after a crash: its last checkpoint is restored.
    if (restore && typeof instance.restore === 'function') {
      const restored = (instance.restore as AnyFunction).call(instance, decodeArg(restore, refs))
      return restored instanceof Promise ? restored.then(() => null) : null
    }
    return null
  }
  const instance = actors.get(id)
  if (!instance) throw new ActorDiedError(`actor ${id} is not on this thread (it died, or was killed)`)
  const m = instance[method]
  if (typeof m !== 'function' || method === 'constructor' || method.startsWith('_')) {
    throw new MagpieError(`actor ${id} has no method ${method}`, { code: 'NOT_FOUND' })
  }
  return (m as AnyFunction).apply(instance, args)
}

function call(running: Running): void {
  const { task } = running
  let result: unknown
  try {
    const fn = modules.get(task.url) as AnyFunction
    const args = task.args.map((arg) => decodeArg(arg, refs))
    result = task.actor ? callActor(task, fn, args) : fn(...args)
  } catch (err) {
    finish(running, { error: serializeError(err) })
    return
  }
  if (result instanceof Promise) {
    result.then(
      (value) => finish(running, encodeResult(value)),
      (err: unknown) => finish(running, { error: serializeError(err) }),
    )
  } else {
    finish(running, encodeResult(result))
  }
}

function encodeResult(value: unknown): Outcome {
  try {
    const encoded = encodeValue(value)
    return encoded.kind === 'bytes'
      ? { value: { kind: 'bytes', bytes: toShared(encoded.bytes) } }
      : { value: encoded }
  } catch (err) {
    return { error: serializeError(err) }
  }
}

function finish(running: Running, outcome: Outcome): void {
  if (running.done) return // abandoned after its time limit
  release(running)
  const ms = performance.now() - running.startedAt
  const before = durations.get(running.task.fn)
  durations.set(running.task.fn, before === undefined ? ms : (before + ms) / 2)
  send({ type: 'done', id: running.task.id, outcome, ms })
  pump()
  if (started.size === 0) refs.idle()
}

function release(running: Running): void {
  running.done = true
  started.delete(running.task.id)
  if (running.waiting === 0) active -= running.task.weight
  const actor = running.task.actor
  if (actor && actor.method !== null) {
    checkpointed(actor.id, actor.checkpointEvery)
    actorRunning.set(actor.id, (actorRunning.get(actor.id) ?? 1) - 1)
    const next = actorWaiting.get(actor.id)?.shift()
    if (next) queueMicrotask(() => start(next))
    else if (actorRunning.get(actor.id) === 0) {
      actorRunning.delete(actor.id)
      actorWaiting.delete(actor.id)
    }
  }
}

/** Imports bundles ahead of their first call, so that no call waits for a cold import. */
function preload(urls: string[]): void {
  for (const url of urls) if (!modules.has(url)) load(url).catch(() => {})
}

async function load(url: string): Promise<void> {
  const mod = (await import(url)) as { default?: unknown }
  if (typeof mod.default !== 'function') throw new MagpieError(`${url} has no default-exported function`)
  modules.set(url, mod.default as AnyFunction)
}

preload(data.urls)

function receive(batch: ToWorker[]): void {
  for (const message of batch) {
    switch (message.type) {
      case 'run':
        queue.push(message.task)
        break
      case 'values':
      case 'waited': {
        const reply = replies.get(message.req)
        replies.delete(message.req)
        reply?.(message)
        break
      }
      case 'functions':
        names = new Set(message.names)
        preload(message.urls)
        break
      case 'abandon': {
        const running = started.get(message.id)
        if (running) release(running)
        break
      }
      case 'cancel': {
        const running = started.get(message.id)
        if (running) running.controller.abort(new TaskCancelledError(`call ${message.id} was cancelled`))
        else if (queue.some((task, i) => i >= queueHead && task.id === message.id))
          cancelledBeforeStart.add(message.id)
        break
      }
      case 'ping':
        send({ type: 'pong', req: message.req })
        break
      case 'drop-actor': {
        actors.delete(message.id)
        // Its calls that wait here never run: they fail as its calls do.
        const error = serializeError(new ActorDiedError(`actor ${message.id} is dead`))
        for (const task of actorWaiting.get(message.id) ?? []) {
          send({ type: 'done', id: task.id, outcome: { error }, ms: 0 })
        }
        actorWaiting.delete(message.id)
        break
      }
      case 'collect':
        refs.collect()
        break
    }
  }
}

/**
 * Takes in what the scheduler sent while a call ran, without going back to the
 * event loop: the next call is usually there already (prefetched), and waiting
 * a turn of the loop for it would idle the thread between every two calls.
 */
function receivePending(): void {
  for (let got = receiveMessageOnPort(port); got; got = receiveMessageOnPort(port))
    receive(got.message as ToWorker[])
}

port.on('message', (batch: ToWorker[]) => {
  receive(batch)
  pump()
})
