/**
 * A node: the local scheduler and object store on the main thread, and one
 * worker thread per CPU running the functions. Tasks wait here until their
 * top-level `$ref` arguments are ready, then go to a worker deque; workers are
 * handed work while they have room in their CPU slot, plus a little prefetch.
 */
import { mkdtempSync } from 'node:fs'
import { availableParallelism, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { type EncodedValue, sizeOf } from '../sdk/codec.ts'
import { FunctionNotFoundError, type SerializedError, serializeError } from '../sdk/errors.ts'
import type { CallOptions } from '../sdk/types.ts'
import { MemoryPressure } from './memory-pressure.ts'
import { NodeCounters } from './node-counters.ts'
import { WorkScheduler } from './scheduler/scheduler.ts'
import { ObjectStore } from './store/object-store.ts'
import { SpillStore } from './store/spill.ts'
import {
  argumentIds,
  argumentProblem,
  lostArgument,
  makeTask,
  refArguments,
  type Task,
  type TaskSpec,
} from './task.ts'
import type { FromWorker, Outcome } from './worker/messages.ts'
import { WorkerHandle } from './worker/worker-handle.ts'

/** What a node needs to know of the deployed functions. */
export interface FunctionCatalog {
  get(name: string): { url: string; config: CallOptions } | undefined
  names(): string[]
  onChange(listener: () => void): () => void
}

export interface NodeOptions {
  functions: FunctionCatalog
  /** This node's id in a cluster: objects made here have ids that start with it and `_`. */
  id?: string
  /** Worker threads (default: one per core). */
  cpus?: number
  /** Bytes of object values kept in memory (default 30% of RAM). */
  objectStoreMemory?: number
  /** Folder for values spilled to disk (default: a new temporary folder); emptied at start, deleted at close. */
  spillDir?: string
  /** Bytes of spill files allowed (default: as much as the disk takes). */
  spillLimit?: number
  /** Default lifetime of results, in seconds (default 3600). */
  ttlS?: number
  /** Tasks handed to a worker beyond its CPU slot, so it never waits for the next (default 1). */
  prefetch?: number
  /**
   * Fetches an argument this node does not hold from the node at `at`; the
   * copy is kept, so that each object crosses to a node at most once.
   */
  fetchRemote?: (id: string, at: string) => Promise<EncodedValue>
  /** Where to fetch an object from that is not here and comes with no address (elsewhere in the cluster). */
  locate?: (id: string) => string | undefined
}

export type { TaskSpec } from './task.ts'

export interface NodeStats {
  cpus: number
  running: number
  queued: number
  steals: number
  objects: {
    count: number
    bytes: number
    spilledCount: number
    spilledBytes: number
    /** Since the start: values written to disk and read back, objects freed. */
    spills: { count: number; bytes: number }
    restores: { count: number; bytes: number }
    freed: number
  }
  /** Finished and failed calls, by function. */
  tasks: Record<string, { finished: number; failed: number }>
  /** Bytes passed between threads by copy and by shared memory. */
  threadBytes: { copied: number; shared: number }
  /** Calls taken from other nodes, and given to them. */
  stolen: { in: number; out: number }
  /** Objects copied here from other nodes. */
  fetched: { count: number; bytes: number }
}

/**
 * Prefetch: a worker is handed work beyond its CPU slot, so that it never
 * waits a message round trip for the next call: always one call more, and more
 * while the work handed to it is expected to take under this many ms (tiny
 * calls then travel by the hundred). Prefetched work cannot be stolen, so
 * this stays small.
 */
const PREFETCH_MS = 2
const PREFETCH_MAX = 256
/** How long a worker has to answer a ping after a call ran out of time, before it is replaced. */
const UNRESPONSIVE_MS = 1000
/** How long a copy of another node's object stays here after the last task that took it (its owner keeps the object). */
const COPY_TTL_MS = 10_000

export class LocalNode {
  readonly store: ObjectStore
  readonly cpus: number
  readonly #functions: FunctionCatalog
  readonly #scheduler: WorkScheduler<Task>
  readonly #workers: WorkerHandle[] = []
  /** Tasks handed to workers, by result id. */
  readonly #running = new Map<string, Task>()
  readonly #counters = new NodeCounters()
  readonly #fetchRemote: NodeOptions['fetchRemote']
  readonly #locate: NodeOptions['locate']
  readonly #idPrefix: string
  readonly #capacity: number
  readonly #ttlMs: number
  readonly #pressure: MemoryPressure
  #dispatchQueued = false
  #closing = false
  #offFunctions: () => void

  constructor(options: NodeOptions) {
    const cpus = options.cpus ?? availableParallelism()
    if (!Number.isInteger(cpus) || cpus < 1) throw new TypeError('options.cpus must be a positive integer')
    const prefetch = options.prefetch ?? 1
    if (!Number.isInteger(prefetch) || prefetch < 0)
      throw new TypeError('options.prefetch must be a non-negative integer')
    const ttlS = options.ttlS ?? 3600
    if (!(ttlS > 0)) throw new TypeError('options.ttlS must be a positive number')
    this.cpus = cpus
    this.#capacity = 1 + prefetch
    this.#ttlMs = ttlS * 1000
    this.#functions = options.functions
    this.#fetchRemote = options.fetchRemote
    this.#locate = options.locate
    this.#idPrefix = options.id === undefined ? '' : `${options.id}_`
    this.#scheduler = new WorkScheduler<Task>(cpus)
    const memoryBytes = options.objectStoreMemory ?? Math.floor(totalmem() * 0.3)
    this.#pressure = new MemoryPressure({
      storeBytes: memoryBytes,
      inMemory: () => this.store.memoryBytes,
      collectWorkers: (which) => {
        for (const w of this.#workers) if (which === 'all' || w.holds.size > 0) w.send({ type: 'collect' })
      },
    })
    this.store = new ObjectStore({
      maxBytes: memoryBytes,
      ttlMs: this.#ttlMs,
      released: (bytes) => this.#pressure.released(bytes),
      spill: new SpillStore({
        dir: options.spillDir ?? mkdtempSync(join(tmpdir(), 'magpie-spill-')),
        limitBytes: options.spillLimit ?? Number.POSITIVE_INFINITY,
      }),
    })
    for (let i = 0; i < cpus; i++) this.#workers.push(this.#spawn(i))
    this.#offFunctions = options.functions.onChange(() => {
      const { names, urls } = this.#catalog()
      for (const w of this.#workers) w.send({ type: 'functions', names, urls })
    })
  }

  /** Resolves once every worker thread is up. */
  async ready(): Promise<void> {
    await Promise.all(this.#workers.map((w) => w.online))
  }

  #catalog(): { names: string[]; urls: string[] } {
    const names = this.#functions.names()
    return { names, urls: names.flatMap((n) => this.#functions.get(n)?.url ?? []) }
  }

  #spawn(index: number): WorkerHandle {
    return new WorkerHandle(
      { index, idPrefix: this.#idPrefix, ...this.#catalog() },
      {
        messages: (handle, batch) => this.#onMessages(handle, batch),
        exit: (handle, error) => this.#onExit(handle, error),
      },
    )
  }

  /**
   * Submits a call. Returns false, and runs nothing, if an object with its id exists.
   * Throws FunctionNotFoundError for an unknown function. A call from outside
   * (no `from`) makes an object a client sees, kept for its TTL; a call from a
   * function makes one its worker holds, freed once nothing needs it.
   */
  submit(spec: TaskSpec, from?: WorkerHandle): boolean {
    const record = this.#functions.get(spec.fn)
    if (!record) throw new FunctionNotFoundError(`no function named ${spec.fn}`)
    const task = makeTask(spec, record, from?.index)
    const ttlS = task.options.ttlS
    const created = this.store.create(spec.id, spec.fn, {
      ttlMs: ttlS === undefined ? this.#ttlMs : ttlS * 1000,
      visible: from === undefined,
    })
    if (!created) return false
    if (from) this.#hold(from, spec.id)
    this.#start(task)
    return true
  }

  /** Waits for the task's arguments, which it pins until it settles. */
  #start(task: Task): void {
    this.#whenArgsReady(task)
    this.store.holdArguments(task.id, argumentIds(task))
  }

  /** A worker holds a handle to the object: it stays while the worker does. */
  #hold(worker: WorkerHandle, id: string): void {
    if (!worker.holds.has(id) && this.store.pin(id)) worker.holds.add(id)
  }

  #release(worker: WorkerHandle, id: string): void {
    if (worker.holds.delete(id)) this.store.unpin(id)
  }

  /** Queues the task once its top-level refs are ready; fails it if one failed or is gone. */
  #whenArgsReady(task: Task): void {
    const refs = refArguments(task)
    let missing = refs.length
    if (missing === 0) {
      this.#enqueue(task)
      return
    }
    let failed = false
    for (const id of refs) {
      if (!this.store.has(id)) {
        const given = task.args.find((a) => a.kind === 'ref' && a.id === id && a.at) as
          | { at?: string }
          | undefined
        const at = given?.at ?? this.#locate?.(id)
        if (at) this.#fetchCopy(id, at)
      }
      this.store.onSettled(id, (entry) => {
        if (failed) return
        const problem = argumentProblem(id, entry)
        if (problem) {
          failed = true
          this.#settle(task, { error: problem })
        } else if (--missing === 0) {
          this.#enqueue(task)
        }
      })
    }
  }

  /** Starts fetching a copy of a remote object; its entry is pending meanwhile, so tasks wait for it. */
  #fetchCopy(id: string, at: string): void {
    // A copy: kept a while for more tasks that take it, dropped rather than spilled when memory is short.
    const fetchRemote = this.#fetchRemote
    if (!fetchRemote || !this.store.create(id, null, { cached: true, visible: true, ttlMs: COPY_TTL_MS }))
      return
    fetchRemote(id, at).then(
      (value) => {
        this.#counters.fetched.count += 1
        this.#counters.fetched.bytes += sizeOf(value)
        this.store.settle(id, { value })
      },
      (err: unknown) => this.store.settle(id, { error: serializeError(err, 'OBJECT_LOST') }),
    )
  }

  #enqueue(task: Task): void {
    if (!this.store.has(task.id)) return // freed before it could run
    this.#scheduler.push(
      task,
      task.origin,
      this.#workers.map((w) => w.load),
    )
    this.#queueDispatch()
  }

  /**
   * Dispatches once the event loop has taken in everything that is ready (all
   * requests and worker messages of this turn), so that workers get batches.
   */
  #queueDispatch(): void {
    if (this.#dispatchQueued) return
    this.#dispatchQueued = true
    setImmediate(() => {
      this.#dispatchQueued = false
      this.#dispatch()
    })
  }

  /**
   * Hands queued tasks to workers: first one to every worker with a free CPU
   * slot (own deque first, else stolen), so that no worker idles while another
   * prefetches; then prefetch, each worker at most its fair share of the queue.
   */
  #dispatch(): void {
    for (let given = true; given && this.#scheduler.queued > 0; ) {
      given = false
      for (const worker of this.#workers) {
        if (!worker.alive || worker.load >= 1 - 1e-9) continue
        const task = this.#scheduler.take(worker.index)
        if (!task) return
        this.#run(worker, task)
        given = true
      }
    }
    const share = Math.ceil(this.#scheduler.queued / this.#workers.length)
    for (const worker of this.#workers) {
      for (let taken = 0; taken < share && worker.alive && this.#wantsPrefetch(worker); taken++) {
        const task = this.#scheduler.take(worker.index)
        if (!task) return
        this.#run(worker, task)
      }
    }
  }

  #wantsPrefetch(worker: WorkerHandle): boolean {
    if (worker.load < this.#capacity - 1e-9) return true
    return worker.expectedMs < PREFETCH_MS && worker.assigned.size < PREFETCH_MAX
  }

  #run(worker: WorkerHandle, task: Task): void {
    const args: EncodedValue[] = []
    for (const arg of task.args) {
      if (arg.kind !== 'ref') {
        args.push(arg)
        continue
      }
      const problem = argumentProblem(arg.id, this.store.lookup(arg.id))
      const value = problem ? undefined : this.store.value(arg.id)
      if (!value) {
        this.#settle(task, { error: problem ?? lostArgument(arg.id) })
        return
      }
      args.push(value)
    }
    this.#counters.crossing(args)
    task.attempts += 1
    this.store.markRunning(task.id, task.attempts)
    worker.assign({
      id: task.id,
      weight: task.weight,
      expectedMs: this.#counters.expectedMs(task.fn),
      waiting: 0,
    })
    this.#running.set(task.id, task)
    worker.send({
      type: 'run',
      task: {
        id: task.id,
        fn: task.fn,
        url: task.url,
        args,
        weight: task.weight,
        ...(task.options.timeoutMs ? { timed: true as const } : {}),
      },
    })
  }

  #onMessages(worker: WorkerHandle, batch: FromWorker[]): void {
    for (const message of batch) {
      switch (message.type) {
        case 'submit':
          this.#counters.crossing(message.args)
          this.#submitNested(worker, message)
          break
        case 'put':
          this.#counters.crossing([message.value])
          this.#put(worker, message.id, message.value)
          break
        case 'hold':
          this.#hold(worker, message.id)
          break
        case 'release':
          this.#release(worker, message.id)
          break
        case 'done':
          if ('value' in message.outcome) this.#counters.crossing([message.outcome.value])
          this.#done(worker, message.id, message.outcome, message.ms)
          break
        case 'get':
          this.#get(worker, message)
          break
        case 'wait':
          this.#wait(worker, message)
          break
        case 'started':
          this.#startClock(worker, message.id)
          break
        case 'pong':
          worker.answered(message.req)
          break
      }
    }
    this.#queueDispatch()
  }

  #submitNested(worker: WorkerHandle, message: Extract<FromWorker, { type: 'submit' }>): void {
    const { id, fn, args, options } = message
    try {
      this.submit({ id, fn, args, options }, worker)
    } catch (err) {
      // The function vanished between the call and now: its result says so.
      this.store.create(id, fn)
      this.#hold(worker, id)
      this.store.settle(id, { error: { code: 'FUNCTION_NOT_FOUND', message: (err as Error).message } })
    }
  }

  /** A put from inside a function: its worker holds it; with no room left it fails with OBJECT_STORE_FULL. */
  #put(worker: WorkerHandle, id: string, value: EncodedValue): void {
    if (!this.store.create(id, null)) return
    this.#hold(worker, id)
    this.store.settle(id, { value })
    this.#pressure.filled()
  }

  /** Starts the call's time limit once its worker starts it. */
  #startClock(worker: WorkerHandle, id: string): void {
    const task = this.#running.get(id)
    const limit = task?.options.timeoutMs
    if (!task || !limit) return
    task.timer = setTimeout(() => this.#timedOut(worker, task, limit), limit)
  }

  /**
   * Fails a call that ran too long and tells its worker to forget it. A worker
   * stuck in synchronous code cannot even answer a ping: it is replaced.
   */
  #timedOut(worker: WorkerHandle, task: Task, limit: number): void {
    if (this.#running.get(task.id) !== task) return
    this.#running.delete(task.id)
    worker.release(task.id)
    this.#settle(task, {
      error: {
        code: 'FUNCTION_TIMEOUT',
        message: `${task.fn} ran past its ${limit} ms limit`,
        attempts: task.attempts,
      },
    })
    worker.send({ type: 'abandon', id: task.id })
    worker.probe(UNRESPONSIVE_MS, () => worker.terminate())
    this.#queueDispatch()
  }

  #done(worker: WorkerHandle, id: string, outcome: Outcome, ms: number): void {
    const task = this.#running.get(id)
    if (!task) return // abandoned after its time limit
    this.#counters.ranFor(task.fn, ms)
    worker.release(id)
    this.#running.delete(id)
    clearTimeout(task.timer)
    if (
      'error' in outcome &&
      task.retryExceptions &&
      task.attempts <= task.maxRetries &&
      this.store.has(id)
    ) {
      this.#scheduler.requeue(task)
      return
    }
    if ('error' in outcome) outcome.error.attempts = task.attempts
    this.#settle(task, outcome)
    if ('value' in outcome) this.#pressure.filled()
  }

  /** Finishes a task's object, and counts the outcome per function. */
  #settle(task: Task, outcome: Outcome): void {
    this.#counters.outcome(task.fn, 'error' in outcome)
    this.store.settle(task.id, outcome)
  }

  #get(worker: WorkerHandle, message: Extract<FromWorker, { type: 'get' }>): void {
    const unique = [...new Set(message.ids)]
    this.#fetchMissing(unique)
    const reply = (settled: string[]) => {
      const done = new Set(settled)
      const results = message.ids.map((id): Outcome => {
        if (!done.has(id))
          return { error: { code: 'GET_TIMEOUT', message: `object ${id} not ready in time` } }
        const entry = this.store.lookup(id)
        const value = entry?.status === 'ready' ? this.store.value(id) : undefined
        return value ? { value } : { error: argumentProblem(id, entry) ?? lostArgument(id) }
      })
      for (const r of results) if ('value' in r) this.#counters.crossing([r.value])
      worker.send({ type: 'values', req: message.req, results })
    }
    this.#whenSettled(worker, message.task, unique, unique.length, message.timeoutMs, reply)
  }

  /** Starts fetching copies of the objects a function asks for that are held elsewhere in the cluster. */
  #fetchMissing(ids: readonly string[]): void {
    if (!this.#locate) return
    for (const id of ids) {
      if (this.store.has(id)) continue
      const at = this.#locate(id)
      if (at) this.#fetchCopy(id, at)
    }
  }

  #wait(worker: WorkerHandle, message: Extract<FromWorker, { type: 'wait' }>): void {
    this.#fetchMissing(message.ids)
    this.#whenSettled(worker, message.task, message.ids, message.numReturns, message.timeoutMs, (ready) =>
      worker.send({ type: 'waited', req: message.req, ready }),
    )
  }

  /** Calls `then` when `count` of `ids` settle; the task's CPU share is free while it waits. */
  #whenSettled(
    worker: WorkerHandle,
    taskId: string | null,
    ids: string[],
    count: number,
    timeoutMs: number | null,
    then: (settled: string[]) => void,
  ): void {
    const limit = timeoutMs ?? Number.POSITIVE_INFINITY
    const waiting = this.store.waitAny(ids, count, 0)
    waiting.then((now) => {
      if (now.length >= count || limit <= 0) {
        then(now)
        return
      }
      if (taskId) worker.block(taskId)
      this.#queueDispatch()
      this.store.waitAny(ids, count, limit).then((settled) => {
        if (taskId) worker.unblock(taskId)
        then(settled)
      })
    })
  }

  #onExit(worker: WorkerHandle, error: Error | undefined): void {
    if (this.#closing) return
    const reason = error ? `${error.name}: ${error.message}` : 'the worker thread exited'
    for (const id of worker.assigned.keys()) {
      const task = this.#running.get(id)
      this.#running.delete(id)
      if (!task) continue
      clearTimeout(task.timer)
      if (task.attempts <= task.maxRetries) {
        this.#scheduler.requeue(task)
      } else {
        const crash: SerializedError = {
          code: 'WORKER_CRASHED',
          name: error?.name ?? 'WorkerCrashed',
          message: reason,
          attempts: task.attempts,
        }
        this.#settle(task, { error: crash })
      }
    }
    // Handles die with their thread.
    for (const id of worker.holds) this.store.unpin(id)
    worker.holds.clear()
    const replacement = this.#spawn(worker.index)
    this.#workers[worker.index] = replacement
    replacement.online.then(() => this.#queueDispatch())
  }

  /**
   * Takes back every queued call that has not started and matches `match`
   * (as a node leaving its cluster hands them back): their objects are
   * forgotten here, so that the owner can place them elsewhere.
   */
  takeBackQueued(match: (id: string) => boolean): string[] {
    const tasks = this.#scheduler.removeWhere((t) => match(t.id))
    for (const t of tasks) this.store.delete(t.id)
    return tasks.map((t) => t.id)
  }

  /**
   * Gives up to `max` queued calls that have not started to another node,
   * only those it `canRun`, first those taking an object in `holds` (the
   * thief has it already).
   */
  giveAway(max: number, holds: ReadonlySet<string>, canRun: (task: Task) => boolean): Task[] {
    const tasks = this.#scheduler.giveAway(
      max,
      (t) => t.args.some((a) => a.kind === 'ref' && holds.has(a.id)),
      canRun,
    )
    this.#counters.stolen.out += tasks.length
    return tasks
  }

  /**
   * Runs a call taken from another node; its object may already be known here
   * as pending. A result that a client reads through this node (`visible`)
   * keeps its TTL here; else it is pinned for its owner, until the owner has
   * it: inline in the report (`store.unpin`), or copied (`keepAsCopy`). True
   * if it was pinned so.
   */
  runStolen(spec: TaskSpec, visible: boolean): boolean {
    this.#counters.stolen.in += 1
    const record = this.#functions.get(spec.fn)
    if (!record) throw new FunctionNotFoundError(`no function named ${spec.fn}`)
    const task = makeTask(spec, record)
    const ttlS = task.options.ttlS
    const created = this.store.create(spec.id, spec.fn, {
      ttlMs: ttlS === undefined ? this.#ttlMs : ttlS * 1000,
      visible,
    })
    const pinned = created && !visible && this.store.pin(spec.id)
    this.#start(task)
    return pinned
  }

  /**
   * A result kept here for the owner of a stolen call, which has it now:
   * it becomes a copy like those fetched from peers (kept a while, dropped
   * first when memory is short).
   */
  keepAsCopy(id: string): void {
    this.store.makeCopy(id, COPY_TTL_MS)
    this.store.unpin(id)
  }

  /** Frees an object; a queued task making it is dropped. */
  delete(id: string): boolean {
    const existed = this.store.delete(id)
    if (existed) this.#scheduler.removeWhere((t) => t.id === id)
    return existed
  }

  stats(): NodeStats {
    const objects = this.store.stats()
    let running = 0
    for (const w of this.#workers) running += w.assigned.size
    return {
      cpus: this.cpus,
      running,
      queued: this.#scheduler.queued,
      steals: this.#scheduler.steals,
      objects: {
        count: objects.count,
        bytes: objects.bytes,
        spilledCount: objects.spilled.count,
        spilledBytes: objects.spilled.bytes,
        spills: objects.spills,
        restores: objects.restores,
        freed: objects.freed,
      },
      tasks: this.#counters.outcomes(),
      threadBytes: this.#counters.threadBytes(),
      stolen: { ...this.#counters.stolen },
      fetched: { ...this.#counters.fetched },
    }
  }

  async close(): Promise<void> {
    this.#closing = true
    this.#offFunctions()
    await Promise.all(this.#workers.map((w) => w.terminate()))
    this.store.close()
  }
}
