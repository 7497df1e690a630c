/**
 * A node, assembled: the object store and the local scheduler on the main
 * thread, one worker thread per CPU running the functions, and what enters
 * and leaves it from outside: calls submitted, calls given to or taken from
 * other nodes, objects freed, its counters. The parts live beside it:
 * task-runner.ts (a task's life), dispatcher.ts (handing tasks to workers),
 * worker-requests.ts (what workers ask), worker-pool.ts (the threads and
 * their handles), remote-objects.ts (copies from other nodes).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { EncodedValue } from '../sdk/codec.ts'
import { ActorNotFoundError, FunctionNotFoundError, type SerializedError } from '../sdk/errors.ts'
import { type ActorSpec, Actors } from './actors.ts'
import { Admission, type AdmissionLimits } from './admission.ts'
import { CallLogs, type LogsFollow, type LogsRead } from './call-logs.ts'
import { Dispatcher } from './dispatcher.ts'
import { cpuLimit, memoryLimit } from './limits.ts'
import { LogPrinter } from './log-printer.ts'
import { MemoryPressure } from './memory-pressure.ts'
import { NodeCounters } from './node-counters.ts'
import { type HistogramData, RecentTasks } from './recent-tasks.ts'
import { RemoteObjects } from './remote-objects.ts'
import { RoomSignal } from './room.ts'
import { WorkScheduler } from './scheduler/scheduler.ts'
import { type HeldObject, isSettled, ObjectStore } from './store/object-store.ts'
import { SpillStore } from './store/spill.ts'
import { type FunctionCatalog, makeTask, type Task, type TaskSpec } from './task.ts'
import { TaskRunner } from './task-runner.ts'
import type { WorkerHandle } from './worker/worker-handle.ts'
import { WorkerPool } from './worker-pool.ts'
import { WorkerRequests } from './worker-requests.ts'

/** How often idle actors are looked at for their TTL, in ms. */
const ACTOR_SWEEP_MS = 5000
/** What calls wrote, kept by default: 64 MiB in all, for an hour after a call's last line. */
export const DEFAULT_LOG_RETENTION = { bytes: 64 * 2 ** 20, ageMs: 3_600_000 }

/** Bytes one call may write to stdout and stderr, by default. */
export const DEFAULT_CALL_OUTPUT_BYTES = 2 ** 20

export interface NodeOptions {
  functions: FunctionCatalog
  /** Called after each call submitted here has been started or queued (a cluster node nudges idle peers). */
  submitted?: (() => void) | undefined
  /** Called after each call that ran here settled (a cluster node looks for more work when a thread is free). */
  finished?: (() => void) | undefined
  /** What calls wrote, kept for their logs: bytes in all, and age after a call's last line (`--log-retention`). */
  logRetention?: { bytes: number; ageMs: number } | undefined
  /** Whether calls' lines also go to this process's stdout and stderr, prefixed (default true). */
  printLogs?: boolean | undefined
  /** This node's id in a cluster: objects made here have ids that start with it and `_`. */
  id?: string
  /** Worker threads (default: one per core this process may use, see limits.ts). */
  cpus?: number
  /** Bytes of object values kept in memory (default 30% of RAM). */
  objectStoreMemory?: number
  /** Folder for values spilled to disk (default: a new temporary folder); emptied at start, deleted at close. */
  spillDir?: string
  /** Bytes of spill files allowed (default: as much as the disk takes). */
  spillLimit?: number
  /** Default lifetime of results, in seconds (default 3600). */
  ttlS?: number
  /** The most heap one worker thread may use, in MiB: a call past it fails with WORKER_CRASHED, the node lives on. */
  workerMemoryMb?: number | undefined
  /** Threads for actors, at most (`--actor-threads`; default four per CPU, at least 4). */
  actorThreads?: number | undefined
  /** Bytes one call may write to stdout and stderr; the rest is dropped, with a marker (default 1 MiB). */
  maxCallOutputBytes?: number | undefined
  /** Bounds on the calls from outside that may wait here (backpressure; defaults from memory). */
  admission?: AdmissionLimits | undefined
  /** The longest any call may run, in ms: calls with no timeoutMs, or a longer one, get this one. */
  maxCallTimeMs?: number | undefined
  /** Tasks handed to a worker beyond its CPU slot, so it never waits for the next (default 1). */
  prefetch?: number
  /**
   * Fetches an argument this node does not hold from the node at `at`; the
   * copy is kept, so that each object crosses to a node at most once.
   */
  fetchRemote?: (id: string, at: string) => Promise<EncodedValue>
  /** Where to fetch an object from that is not here and comes with no address (elsewhere in the cluster). */
  locate?: (id: string) => string | undefined
  /** Cancels a call of this node's that runs on another node (it was stolen). */
  cancelElsewhere?: (id: string, options: CancelRequest) => void
  /**
   * Sends a method call of an actor that does not live here to where it
   * does (through the head); its object here settles with the result. Without
   * it, such a call fails with ACTOR_NOT_FOUND.
   */
  actorElsewhere?: (spec: TaskSpec) => void
  /** Told of an actor made here by a function, so that others can find it. */
  actorMade?: (spec: ActorSpec) => void
  /** Finds a live actor that does not live here, by name or id (on a cluster, the head knows them all). */
  findActorElsewhere?: (nameOrId: string) => Promise<string | undefined>
  /** Told of every checkpoint of an actor here, so that it can be restored elsewhere should this node die. */
  actorCheckpointed?: (id: string, state: EncodedValue) => void
}

export type { FunctionCatalog, TaskSpec } from './task.ts'

/** How a call is cancelled: `force` replaces its worker at once; `recursive` cancels the calls it made. */
export interface CancelRequest {
  force: boolean
  recursive: boolean
}

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
  /** How long calls ran and waited to run, by function (see RecentTasks). */
  latency: { durations: Record<string, HistogramData>; waits: Record<string, HistogramData> }
  /** This process: resident memory and heap in bytes, CPU seconds used since the start. */
  process: { rss: number; heapUsed: number; cpuSeconds: number }
}

export class LocalNode {
  readonly store: ObjectStore
  readonly cpus: number
  readonly #functions: FunctionCatalog
  readonly #scheduler: WorkScheduler<Task>
  readonly #counters = new NodeCounters()
  readonly #pool: WorkerPool
  readonly #dispatcher: Dispatcher
  readonly #tasks: TaskRunner
  readonly #remote: RemoteObjects
  readonly #ttlMs: number
  readonly #maxCallTimeMs: number | undefined
  readonly #admission: Admission
  /** Whether this node is full, as its threads see it. */
  readonly #submitted: (() => void) | undefined
  readonly #room: RoomSignal
  /** Calls made by calls running here, by the id of the call that made them: what a recursive cancel reaches. */
  readonly #children = new Map<string, string[]>()
  /** The actors living on this node. */
  readonly actors: Actors
  /** What calls wrote (GET /v1/objects/{id}/logs). */
  readonly logs: CallLogs
  /** The calls seen lately, and how long calls ran and waited (GET /v1/tasks, /metrics). */
  readonly recentTasks = new RecentTasks()
  readonly #printer: LogPrinter | undefined
  readonly #cancelElsewhere: NodeOptions['cancelElsewhere']
  readonly #actorElsewhere: NodeOptions['actorElsewhere']
  readonly #actorSweeper: ReturnType<typeof setInterval>
  readonly #actorMade: NodeOptions['actorMade']
  readonly #actorCheckpointed: NodeOptions['actorCheckpointed']

  constructor(options: NodeOptions) {
    const cpus = options.cpus ?? cpuLimit()
    if (!Number.isInteger(cpus) || cpus < 1) throw new TypeError('options.cpus must be a positive integer')
    const prefetch = options.prefetch ?? 1
    if (!Number.isInteger(prefetch) || prefetch < 0)
      throw new TypeError('options.prefetch must be a non-negative integer')
    const ttlS = options.ttlS ?? 3600
    if (!(ttlS > 0)) throw new TypeError('options.ttlS must be a positive number')
    this.cpus = cpus
    this.#ttlMs = ttlS * 1000
    const heapMb = options.workerMemoryMb
    if (heapMb !== undefined && !(Number.isInteger(heapMb) && heapMb >= 16))
      throw new TypeError('options.workerMemoryMb must be an integer of at least 16')
    const output = options.maxCallOutputBytes
    if (output !== undefined && !(Number.isInteger(output) && output >= 0))
      throw new TypeError('options.maxCallOutputBytes must be a non-negative integer')
    const maxCall = options.maxCallTimeMs
    if (maxCall !== undefined && !(maxCall > 0))
      throw new TypeError('options.maxCallTimeMs must be a positive number')
    this.#maxCallTimeMs = maxCall
    this.#cancelElsewhere = options.cancelElsewhere
    this.#actorElsewhere = options.actorElsewhere
    this.#actorMade = options.actorMade
    this.#actorCheckpointed = options.actorCheckpointed
    this.#room = new RoomSignal(cpus)
    this.#submitted = options.submitted
    this.#admission = new Admission(options.admission ?? {}, () => ({
      calls: this.store.unfinished,
      bytes: this.#tasks.waitingBytes,
    }))
    this.#functions = options.functions
    this.#scheduler = new WorkScheduler<Task>(cpus)
    const memoryBytes = options.objectStoreMemory ?? Math.floor(memoryLimit() * 0.3)
    const pressure = new MemoryPressure({
      storeBytes: memoryBytes,
      inMemory: () => this.store.memoryBytes,
      collectWorkers: (which) => this.#pool.collect(which),
    })
    const retention = options.logRetention ?? DEFAULT_LOG_RETENTION
    this.logs = new CallLogs({ maxBytes: retention.bytes, maxAgeMs: retention.ageMs })
    this.#printer = options.printLogs === false ? undefined : new LogPrinter()
    this.store = new ObjectStore({
      maxBytes: memoryBytes,
      ttlMs: this.#ttlMs,
      released: (bytes) => pressure.released(bytes),
      freed: (id) => this.actors.released(id),
      spill: new SpillStore({
        dir: options.spillDir ?? mkdtempSync(join(tmpdir(), 'magpie-spill-')),
        limitBytes: options.spillLimit ?? Number.POSITIVE_INFINITY,
      }),
    })
    const store = this.store
    const counters = this.#counters
    this.#remote = new RemoteObjects({
      store,
      counters,
      fetchRemote: options.fetchRemote,
      locate: options.locate,
    })
    this.#tasks = new TaskRunner({
      store,
      counters,
      remote: this.#remote,
      pressure,
      dispatcher: () => this.#dispatcher,
      workers: () => this.#pool.all(),
      checkpointOf: (id) => this.actors.checkpointOf(id),
      started: (task, worker) => {
        task.startedAt = this.recentTasks.started(task.id, task.fn, worker.index, task.queuedAt)
      },
      settled: (task, outcome) => {
        const ok = 'value' in outcome
        this.#children.delete(task.id)
        this.logs.settled(task.id)
        const error = ok ? undefined : outcome.error
        const state = ok ? 'finished' : error?.code === 'TASK_CANCELLED' ? 'cancelled' : 'failed'
        this.recentTasks.settled(task.id, task.fn, state, task.startedAt, error)
        if (task.actor) this.actors.settled(task, ok)
        options.finished?.()
      },
    })
    const requests = new WorkerRequests({
      store,
      counters,
      pressure,
      remote: this.#remote,
      tasks: this.#tasks,
      pool: () => this.#pool,
      dispatcher: () => this.#dispatcher,
      submit: (spec, from, parent) => this.submit(spec, from, parent),
      cancel: (id, how) => this.cancel(id, how),
      actors: () => this.actors,
      createActor: (spec, from) => this.createActor(spec, from),
      findActorElsewhere: options.findActorElsewhere,
      log: (m) => {
        // A call made on another node runs here: its lines are found under its parent's too.
        if (!this.logs.has(m.id)) {
          const parent = this.#tasks.runningTask(m.id)?.parent
          if (parent !== undefined) this.logs.link(parent, m.id)
        }
        this.logs.add(m.id, m.fn, { t: m.t, stream: m.stream, text: m.text })
        this.#printer?.print(m.id, m.fn, m.stream, m.text)
      },
      checkpointed: (id, state) => {
        this.actors.checkpointed(id, state)
        this.#actorCheckpointed?.(id, state)
      },
    })
    this.#pool = new WorkerPool({
      cpus,
      idPrefix: options.id === undefined ? '' : `${options.id}_`,
      functions: options.functions,
      store,
      workerMemoryMb: options.workerMemoryMb,
      actorThreads: options.actorThreads,
      actorsOn: (worker) => this.actors.on(worker),
      maxCallOutputBytes: options.maxCallOutputBytes ?? DEFAULT_CALL_OUTPUT_BYTES,
      room: this.#room.cells,
      messages: (worker, batch) => {
        requests.handle(worker, batch)
        let submits = 0
        for (const message of batch) if (message.type === 'submit') submits++
        this.#publishRoom(Math.min(worker.index, cpus), submits)
      },
      crashed: (worker, error) => {
        this.#room.reset(Math.min(worker.index, cpus))
        // Its actors are made again (or die) first: their calls in flight then run again after them, or fail.
        this.actors.hostDied(worker)
        this.#tasks.crashed(worker, error)
      },
      replaced: () => this.#dispatcher.soon(),
    })
    this.actors = new Actors({
      host: () => this.#pool.actorHost(),
      run: (worker, task) => this.#tasks.run(worker, task),
      fail: (task, error) => this.#tasks.settle(task, { error }),
      construct: (spec, attempt) => this.#reconstruct(spec, attempt),
      start: (task) => this.#tasks.start(task),
      drop: (worker, id) => worker.send({ type: 'drop-actor', id }),
    })
    this.#dispatcher = new Dispatcher({
      actors: this.actors,
      scheduler: this.#scheduler,
      pool: this.#pool,
      prefetch,
      run: (worker, task) => this.#tasks.run(worker, task),
      jsonOf: (id) => {
        const value = store.value(id)
        return value?.kind === 'json' ? value.text : undefined
      },
      fail: (task, error) => this.#tasks.settle(task, { error }),
      wanted: (task) => {
        // A batch, while one of its calls is.
        if (task.members) {
          return task.members.some((m) => {
            const entry = store.lookup(m.id)
            return entry !== undefined && !isSettled(entry)
          })
        }
        const entry = store.lookup(task.id)
        if (entry && !isSettled(entry)) return true
        this.#tasks.uncount(task) // freed while it waited
        return false
      },
    })
    // Actors idle past their TTL are let go (not the detached ones).
    this.#actorSweeper = setInterval(() => {
      this.actors.expire(this.#ttlMs)
      this.logs.sweep()
    }, ACTOR_SWEEP_MS)
    this.#actorSweeper.unref()
    this.#publishRoom()
  }

  /**
   * Whether `calls` more calls from outside, with `bytes` of arguments, may
   * wait here: throws QueueFullError if not.
   */
  admit(calls: number, bytes: number): void {
    this.#admission.admit(calls, bytes)
  }

  /** Resolves once every worker thread is up. */
  ready(): Promise<void> {
    return this.#pool.ready()
  }

  /**
   * Submits a call. Returns false, and runs nothing, if an object with its id exists.
   * Throws FunctionNotFoundError for an unknown function. A call from outside
   * (no `from`) makes an object a client sees, kept for its TTL; a call from a
   * function makes one its worker holds, freed once nothing needs it.
   */
  submit(spec: TaskSpec, from?: WorkerHandle, parent?: string | null): boolean {
    // A method call runs on its actor's class, at the version the actor was made with.
    if (spec.actor && spec.actor.method !== null) {
      const id = this.actors.find(spec.actor.id)
      if (id === undefined && from && this.#actorElsewhere) {
        // An actor of another node: its result comes back to this object.
        if (!this.store.create(spec.id, spec.fn, { ttlMs: this.#ttlMs, visible: false })) return false
        this.#pool.hold(from, spec.id)
        this.#actorElsewhere(spec)
        return true
      }
      if (id !== undefined && id !== spec.actor.id) spec = { ...spec, actor: { ...spec.actor, id } }
    }
    const target = spec.actor && spec.actor.method !== null ? this.#actorClass(spec.actor.id) : undefined
    // Nested calls go near their thread's deque; a sized thread has none.
    const task = this.#task(
      target === undefined ? spec : { ...spec, fn: target },
      from && from.index < this.cpus ? from.index : undefined,
    )
    if (!this.#create(task, from === undefined)) return false
    task.queuedAt = this.recentTasks.queued(task.id, task.fn, task.actor?.id)
    if (task.actor) this.actors.submitted(task)
    if (from) this.#pool.hold(from, spec.id)
    if (parent) {
      this.logs.link(parent, spec.id)
      const siblings = this.#children.get(parent)
      if (siblings) siblings.push(spec.id)
      else this.#children.set(parent, [spec.id])
    }
    this.#tasks.start(task)
    if (!from) this.#publishRoom()
    this.#submitted?.()
    return true
  }

  /**
   * Makes an actor: records it (throwing NameTakenError if its name is held)
   * and submits its constructor as its first call, whose object (the actor's
   * id) settles once it is up. False, and nothing made, if the id is taken.
   */
  createActor(spec: ActorSpec, from?: WorkerHandle, restore?: EncodedValue): boolean {
    if (this.store.lookup(spec.id)) return false
    if (!this.#functions.get(spec.fn)) throw new FunctionNotFoundError(`no actor class named ${spec.fn}`)
    // Made again here after its node died, the actor keeps its id; its constructor's call has one of its own.
    const actorId = spec.actor?.id ?? spec.id
    const { name: _name, detached: _detached, ...call } = spec
    // Its class's config (maxConcurrency, maxRestarts...) under the options it was made with.
    const options = { ...this.#functions.get(spec.fn)?.config, ...spec.options }
    // Made by a function without a name: it lives while a handle to it does (Actors.released).
    const scoped = from !== undefined && spec.name === undefined && options.lifetime !== 'detached'
    if (!this.actors.create({ ...spec, id: actorId, options }, scoped)) return false
    // Made again after its node died: its last checkpoint is restored after its constructor.
    if (restore) this.actors.checkpointed(actorId, restore)
    if (from) this.#actorMade?.({ ...spec, options })
    return this.submit({ ...call, actor: { id: actorId, method: null } }, from)
  }

  /**
   * What a call wrote here (with `children`, the calls under it too), and,
   * with `follow`, the lines to come until it settles. A call not known here
   * is followed only with `elsewhere` (a head asks every node: the call may
   * yet run here, or its children), until the reader goes away.
   */
  readLogs(id: string, children: boolean, follow?: LogsFollow, elsewhere = false): LogsRead {
    const entry = this.store.lookup(id)
    if (follow && !(entry && isSettled(entry))) {
      let ended = false
      let off = () => {}
      const end = () => {
        if (ended) return
        ended = true
        stop()
        off()
        follow.end()
      }
      const stop = this.logs.follow(
        id,
        { chunk: (of, chunk) => follow.line({ ...chunk, id: of }), end },
        children,
      )
      // It ends when its object settles here, however it does (run here, or by another node that
      // stole it): after the lines that came with its result.
      if (entry) off = this.store.onSettled(id, () => queueMicrotask(end))
      follow.signal.addEventListener(
        'abort',
        () => {
          stop()
          off()
        },
        { once: true },
      )
      // A call that is gone here, or was never here: nothing will settle it here.
      if (!entry && !elsewhere) queueMicrotask(end)
    } else if (follow) queueMicrotask(() => follow.end())
    const { chunks, gone } = this.logs.read(id, children)
    return { lines: chunks, gone, known: entry !== undefined || chunks.length > 0 || gone.length > 0 }
  }

  /** The biggest objects here, with what holds them (`magpie memory`). */
  biggestObjects(limit: number): HeldObject[] {
    const threads = this.#pool.all()
    return this.store.biggest(limit, (id) => threads.filter((w) => w.holds.has(id)).length)
  }

  /** Kills an actor: its queued calls fail with ACTOR_DIED. False if it is unknown or dead already. */
  killActor(id: string): boolean {
    return this.actors.kill(id)
  }

  /** The class (name@version) of a live actor; ActorNotFoundError if there is none. */
  #actorClass(id: string): string {
    const info = this.actors.info(id)
    if (!info) throw new ActorNotFoundError(`no actor ${id}`)
    return info.class
  }

  /** Submits an actor's constructor again (a restart), as a call of its own. */
  #reconstruct(spec: ActorSpec, attempt: number): Task {
    const task = this.#task({
      id: `${spec.id}_r${attempt}`,
      fn: spec.fn,
      args: spec.args,
      options: spec.options,
      actor: { id: spec.id, method: null },
    })
    this.#create(task, false)
    return task
  }

  /** Tells the threads the node's room, after it took in `seen` nested calls of `thread`. */
  #publishRoom(thread = 0, seen = 0): void {
    this.#room.update(this.#admission.room(), thread, seen)
  }

  #task(spec: TaskSpec, origin?: number): Task {
    const record = this.#functions.get(spec.fn)
    if (!record) throw new FunctionNotFoundError(`no function named ${spec.fn}`)
    const task = makeTask(spec, record, origin)
    const max = this.#maxCallTimeMs
    if (max !== undefined && !((task.options.timeoutMs ?? Number.POSITIVE_INFINITY) <= max))
      task.options.timeoutMs = max
    return task
  }

  /** The task's object, with its TTL; false if the id is taken. */
  #create(task: Task, visible: boolean): boolean {
    const ttlS = task.options.ttlS
    return this.store.create(task.id, task.fn, {
      ttlMs: ttlS === undefined ? this.#ttlMs : ttlS * 1000,
      visible,
    })
  }

  /**
   * Takes back every queued call that has not started and matches `match`
   * (as a node leaving its cluster hands them back): their objects are
   * forgotten here, so that the owner can place them elsewhere.
   */
  takeBackQueued(match: (id: string) => boolean): string[] {
    const tasks = this.#scheduler.removeWhere((t) => match(t.id))
    for (const t of tasks) {
      this.#tasks.uncount(t)
      this.store.delete(t.id)
    }
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
      // A batch stays: its calls' objects are owned here.
      (t) => t.members === undefined && canRun(t),
    )
    this.#counters.stolen.out += tasks.length
    for (const t of tasks) {
      this.#tasks.uncount(t)
      this.recentTasks.forget(t.id)
    }
    return tasks
  }

  /**
   * Settles a call placed or stolen here whose function this node cannot
   * have (no such version, or its code could not be had): its object fails
   * with `error`, so that its owner hears why.
   */
  failUnknown(id: string, fn: string, error?: SerializedError): void {
    this.store.create(id, fn, { ttlMs: this.#ttlMs, visible: true })
    this.store.settle(id, { error: error ?? { code: 'FUNCTION_NOT_FOUND', message: `no function ${fn}` } })
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
    const task = this.#task(spec)
    const pinned = this.#create(task, visible) && !visible && this.store.pin(spec.id)
    // Its owner forgot it when it gave it away: recent calls list it here, where it runs.
    task.queuedAt = this.recentTasks.queued(task.id, task.fn, task.actor?.id)
    this.#tasks.start(task)
    this.#publishRoom()
    return pinned
  }

  /**
   * Runs here again a call of this node's that was given to another node and
   * lost there (that node died, or the result could not be had): that run
   * counts as an attempt, and past maxRetries the call fails with
   * WORKER_CRASHED. Nothing happens to a call that settled or was freed.
   */
  runAgain(task: Task, why: string): void {
    const entry = this.store.lookup(task.id)
    if (!entry || isSettled(entry)) return
    task.attempts += 1
    task.queuedAt = this.recentTasks.queued(task.id, task.fn, task.actor?.id)
    if (task.attempts > task.maxRetries) {
      this.#tasks.settle(task, { error: { code: 'WORKER_CRASHED', message: why, attempts: task.attempts } })
      return
    }
    this.#tasks.resume(task)
  }

  /**
   * A result kept here for the owner of a stolen call, which has it now:
   * it becomes a copy like those fetched from peers (kept a while, dropped
   * first when memory is short).
   */
  keepAsCopy(id: string): void {
    this.#remote.keepAsCopy(id)
  }

  /** Counts a value copied here from another node by the cluster's own requests (an owner's results, and copies it settles with). */
  countFetched(value: EncodedValue): void {
    this.#counters.copiedHere(value)
  }

  /**
   * Cancels an unfinished call: it settles as cancelled (409 TASK_CANCELLED)
   * at once, wherever it is: queued or waiting for its arguments here (it
   * never runs), running here (its signal aborts, see TaskRunner), or given
   * to another node. With `recursive`, the calls it made are cancelled too.
   * A finished call is left as it is. False if the object is unknown.
   */
  cancel(id: string, how: CancelRequest): boolean {
    const entry = this.store.lookup(id)
    if (!entry) return false
    if (isSettled(entry)) return true
    if (how.recursive) for (const child of this.#children.get(id) ?? []) this.cancel(child, how)
    this.#children.delete(id)
    const queued = this.#scheduler.removeWhere((t) => t.id === id)
    for (const t of queued) this.#tasks.uncount(t)
    const running = this.#tasks.cancelRunning(id, how.force)
    const error = { code: 'TASK_CANCELLED' as const, message: `call ${id} was cancelled` }
    this.store.settle(id, { error, cancelled: true })
    this.recentTasks.settled(id, entry.function ?? '', 'cancelled', undefined, error)
    this.logs.settled(id)
    if (!running && queued.length === 0) this.#cancelElsewhere?.(id, how)
    return true
  }

  /** Frees an object; a call making it is cancelled first, with the calls it made. */
  delete(id: string): boolean {
    // Cancelling took an unfinished call out of the queue; a finished one is in no queue.
    this.cancel(id, { force: false, recursive: true })
    return this.store.delete(id)
  }

  /** Calls running on the workers and queued for them: what stealing and stopping look at, without the rest of stats(). */
  get load(): { running: number; queued: number } {
    return { running: this.#pool.running, queued: this.#scheduler.queued + this.#dispatcher.sizedQueued }
  }

  stats(): NodeStats {
    const objects = this.store.stats()
    return {
      cpus: this.cpus,
      running: this.#pool.running,
      queued: this.#scheduler.queued + this.#dispatcher.sizedQueued,
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
      latency: {
        durations: Object.fromEntries(this.recentTasks.durations),
        waits: Object.fromEntries(this.recentTasks.waits),
      },
      process: processStats(),
      threadBytes: this.#counters.threadBytes(),
      stolen: { ...this.#counters.stolen },
      fetched: { ...this.#counters.fetched },
    }
  }

  async close(): Promise<void> {
    clearInterval(this.#actorSweeper)
    this.#printer?.close()
    await this.#pool.close()
    this.store.close()
  }
}

/** This process's memory and CPU time, for the stats of a node that is a process of its own. */
function processStats(): NodeStats['process'] {
  const { rss, heapUsed } = process.memoryUsage()
  const cpu = process.cpuUsage()
  return { rss, heapUsed, cpuSeconds: (cpu.user + cpu.system) / 1e6 }
}
