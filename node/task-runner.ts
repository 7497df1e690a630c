/**
 * A task's life on a node: it waits until its top-level `$ref` arguments are
 * ready (pinning them until it settles), is queued, runs on a worker with its
 * arguments resolved to values, and settles with its outcome, or is run
 * again: after a throw that `retryExceptions` names, after its worker died,
 * both up to `maxRetries` and after a backoff (`retryDelayMs`). A call past
 * its `timeoutMs` fails, and a worker that will not even answer a ping then
 * is replaced.
 */

import { backoffDelay } from '../sdk/backoff.ts'
import type { EncodedValue } from '../sdk/codec.ts'
import type { SerializedError } from '../sdk/errors.ts'
import { argumentBytes } from './admission.ts'
import { splitOutcome } from './batcher.ts'
import type { Dispatcher } from './dispatcher.ts'
import type { MemoryPressure } from './memory-pressure.ts'
import type { NodeCounters } from './node-counters.ts'
import type { RemoteObjects } from './remote-objects.ts'
import type { ObjectStore } from './store/object-store.ts'
import { argumentIds, argumentProblem, lostArgument, refArguments, type Task } from './task.ts'
import type { Outcome, RunTask } from './worker/messages.ts'
import type { WorkerHandle } from './worker/worker-handle.ts'

/** How long a cancelled call that keeps running may hold its CPU slot before its worker is replaced. */
const CANCEL_GRACE_MS = 5000
/** First wait before a retry, and the longest, in ms. */
const DEFAULT_RETRY_DELAY_MS = 100
const MAX_RETRY_DELAY_MS = 30_000
/** How long a worker has to answer a ping after a call ran out of time, before it is replaced. */
const UNRESPONSIVE_MS = 1000

export interface TaskRunnerOptions {
  store: ObjectStore
  counters: NodeCounters
  remote: RemoteObjects
  pressure: MemoryPressure
  dispatcher(): Dispatcher
  /** The worker threads, to find the one running a call. */
  workers(): readonly WorkerHandle[]
  /** Told of every task that settles, before its object does. */
  settled?: (task: Task, outcome: Outcome) => void
  /** Told of every task handed to a thread. */
  started?: (task: Task, worker: WorkerHandle) => void
  /** The last checkpoint of an actor, if it has one. */
  checkpointOf?: (actorId: string) => EncodedValue | undefined
}

export class TaskRunner {
  readonly #store: ObjectStore
  readonly #counters: NodeCounters
  readonly #remote: RemoteObjects
  readonly #pressure: MemoryPressure
  readonly #dispatcher: () => Dispatcher
  readonly #workers: () => readonly WorkerHandle[]
  readonly #settled: (task: Task, outcome: Outcome) => void
  readonly #started: (task: Task, worker: WorkerHandle) => void
  readonly #checkpointOf: (actorId: string) => EncodedValue | undefined
  /** Tasks handed to workers, by result id. */
  readonly #running = new Map<string, Task>()

  /** A call running on a thread now, if it is. */
  runningTask(id: string): Task | undefined {
    return this.#running.get(id)
  }
  /** Bytes of arguments of tasks started here that have not run yet. */
  #waitingBytes = 0

  constructor(options: TaskRunnerOptions) {
    this.#store = options.store
    this.#counters = options.counters
    this.#remote = options.remote
    this.#pressure = options.pressure
    this.#dispatcher = options.dispatcher
    this.#workers = options.workers
    this.#settled = options.settled ?? (() => {})
    this.#started = options.started ?? (() => {})
    this.#checkpointOf = options.checkpointOf ?? (() => undefined)
  }

  get waitingBytes(): number {
    return this.#waitingBytes
  }

  /** The task no longer waits here (it runs, settled, or left for another node): its arguments stop counting. */
  uncount(task: Task): void {
    this.#waitingBytes -= task.waitingBytes
    task.waitingBytes = 0
  }

  /** Waits for the task's arguments, which it pins until it settles, then queues it. */
  start(task: Task): void {
    task.waitingBytes = argumentBytes(task.args)
    this.#waitingBytes += task.waitingBytes
    this.#whenArgsReady(task)
    this.#store.holdArguments(task.id, argumentIds(task))
  }

  /** Queues again a task whose run elsewhere was lost (its arguments are pinned still). */
  resume(task: Task): void {
    this.#whenArgsReady(task)
  }

  /** Queues the task once its top-level refs are ready; fails it if one failed or is gone. */
  #whenArgsReady(task: Task): void {
    const refs = refArguments(task)
    let missing = refs.length
    if (missing === 0) {
      this.#dispatcher().enqueue(task)
      return
    }
    let failed = false
    for (const id of refs) {
      const given = task.args.find((a) => a.kind === 'ref' && a.id === id && a.at) as
        | { at?: string }
        | undefined
      this.#remote.fetchIfMissing(id, given?.at)
      this.#store.onSettled(id, (entry) => {
        if (failed) return
        const problem = argumentProblem(id, entry)
        if (problem) {
          failed = true
          this.settle(task, { error: problem })
        } else if (--missing === 0) {
          this.#dispatcher().enqueue(task)
        }
      })
    }
  }

  /** Hands a queued task to a worker, its arguments resolved to values. */
  run(worker: WorkerHandle, task: Task): void {
    const args: EncodedValue[] = []
    for (const arg of task.args) {
      if (arg.kind !== 'ref') {
        args.push(arg)
        continue
      }
      const problem = argumentProblem(arg.id, this.#store.lookup(arg.id))
      const value = problem ? undefined : this.#store.value(arg.id)
      if (!value) {
        this.settle(task, { error: problem ?? lostArgument(arg.id) })
        return
      }
      args.push(value)
    }
    this.#counters.crossing(args)
    this.uncount(task)
    task.attempts += 1
    this.#store.markRunning(task.id, task.attempts)
    worker.assign({
      id: task.id,
      weight: task.weight,
      expectedMs: this.#counters.expectedMs(task.fn),
      waiting: 0,
    })
    this.#running.set(task.id, task)
    this.#started(task, worker)
    for (const member of task.members ?? []) {
      this.#store.markRunning(member.id, task.attempts)
      this.#started(member, worker)
    }
    worker.send({
      type: 'run',
      task: {
        id: task.id,
        fn: task.fn,
        url: task.url,
        args,
        // An actor thread starts each call it is given: the node keeps each actor's to its turn and concurrency.
        weight: task.actor ? 0 : task.weight,
        ...(task.options.timeoutMs ? { timed: true as const } : {}),
        ...(task.env ? { env: task.env } : {}),
        ...(task.actor ? { actor: this.#actorOf(task) } : {}),
      },
    })
  }

  /** What an actor's thread needs of a call: its actor, concurrency, checkpoints, and (constructor) the state to restore. */
  #actorOf(task: Task): NonNullable<RunTask['actor']> {
    const actor = task.actor as NonNullable<Task['actor']>
    const restore = actor.method === null ? this.#checkpointOf(actor.id) : undefined
    return {
      ...actor,
      concurrency: task.options.maxConcurrency ?? 1,
      ...(task.options.checkpointEvery ? { checkpointEvery: task.options.checkpointEvery } : {}),
      ...(restore ? { restore } : {}),
    }
  }

  /** Starts the call's time limit once its worker starts it. */
  started(worker: WorkerHandle, id: string): void {
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
    this.settle(task, {
      error: {
        code: 'FUNCTION_TIMEOUT',
        message: `${task.fn} ran past its ${limit} ms limit`,
        attempts: task.attempts,
      },
    })
    worker.send({ type: 'abandon', id: task.id })
    worker.probe(UNRESPONSIVE_MS, () => worker.terminate())
    this.#dispatcher().soon()
  }

  /**
   * A running call is cancelled (its object settles as cancelled elsewhere):
   * its signal aborts; its result, if it comes, is discarded. Its worker is
   * replaced at once with `force`, or if the call still runs after a grace
   * period. False if the call does not run here.
   */
  cancelRunning(id: string, force: boolean): boolean {
    const task = this.#running.get(id)
    if (!task) return false
    const worker = this.#workerOf(id)
    clearTimeout(task.timer)
    task.maxRetries = 0 // a cancelled call never runs again
    worker?.send({ type: 'cancel', id })
    if (worker && force) {
      worker.terminate()
      return true
    }
    setTimeout(() => {
      if (this.#running.get(id) === task) this.#workerOf(id)?.terminate()
    }, CANCEL_GRACE_MS).unref()
    return true
  }

  #workerOf(id: string): WorkerHandle | undefined {
    return this.#workers().find((w) => w.assigned.has(id))
  }

  /** A worker finished a call: it settles, or runs again if it threw and may be retried. */
  done(worker: WorkerHandle, id: string, outcome: Outcome, ms: number): void {
    const task = this.#running.get(id)
    if (!task) return // abandoned after its time limit
    this.#counters.ranFor(task.fn, ms)
    worker.release(id)
    this.#running.delete(id)
    clearTimeout(task.timer)
    if ('error' in outcome && task.retriesOn(outcome.error.name) && task.attempts <= task.maxRetries) {
      this.#retryLater(task)
      return
    }
    if ('error' in outcome) outcome.error.attempts = task.attempts
    this.settle(task, outcome)
    if ('value' in outcome) this.#pressure.filled()
  }

  /** A worker died: its calls run again while their retries allow, else fail with WORKER_CRASHED. */
  crashed(worker: WorkerHandle, error: Error | undefined): void {
    const reason = error ? `${error.name}: ${error.message}` : 'the worker thread exited'
    for (const id of worker.assigned.keys()) {
      const task = this.#running.get(id)
      this.#running.delete(id)
      if (!task) continue
      clearTimeout(task.timer)
      if (task.attempts <= task.maxRetries) {
        this.#retryLater(task)
      } else {
        const crash: SerializedError = {
          // An actor's call dies with its actor's thread.
          code: task.actor ? 'ACTOR_DIED' : 'WORKER_CRASHED',
          name: error?.name ?? (task.actor ? 'ActorDiedError' : 'WorkerCrashed'),
          message: reason,
          attempts: task.attempts,
        }
        this.settle(task, { error: crash })
      }
    }
  }

  /**
   * Queues a call again after its backoff: `retryDelayMs` (default 100),
   * doubling with each attempt up to 30 s, with jitter; so that a call that
   * keeps crashing its worker cannot spin. One freed meanwhile is dropped.
   */
  #retryLater(task: Task): void {
    const baseMs = task.options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS
    if (baseMs === 0) {
      this.#dispatcher().requeue(task)
      return
    }
    const delay = backoffDelay(task.attempts - 1, { baseMs, maxMs: MAX_RETRY_DELAY_MS })
    setTimeout(() => this.#dispatcher().requeue(task), delay).unref()
  }

  /** Finishes a task's object, and counts the outcome per function. */
  settle(task: Task, outcome: Outcome): void {
    if (task.members) {
      // A batch: each of its calls settles with its item of the result.
      this.uncount(task)
      this.#settled(task, outcome)
      // Counted once per call, as its members settle.
      const outcomes = splitOutcome(task, outcome)
      task.members.forEach((member, i) => {
        member.attempts = task.attempts
        this.settle(member, outcomes[i] as Outcome)
      })
      return
    }
    this.uncount(task)
    this.#settled(task, outcome)
    this.#counters.outcome(task.fn, 'error' in outcome)
    this.#store.settle(task.id, outcome)
  }
}
