/**
 * Handing queued tasks to worker threads: every worker with a free CPU slot
 * gets one first (from its own deque, else stolen from another's), then
 * workers prefetch a little beyond their slot, so that none waits a message
 * round trip for its next call. Dispatch runs once per turn of the event
 * loop, after everything ready in it was taken in, so that workers get batches.
 *
 * Calls that ask for a heap of their own size (`memoryMb`) wait in a queue
 * of their own, in order, and run in sized threads (worker-pool.ts) when the
 * node has a CPU slot free in all: while they run, the others take fewer.
 */
import type { SerializedError } from '../sdk/errors.ts'
import { Batcher } from './batcher.ts'
import type { WorkScheduler } from './scheduler/scheduler.ts'
import type { Task } from './task.ts'
import type { WorkerHandle } from './worker/worker-handle.ts'
import type { WorkerPool } from './worker-pool.ts'

/**
 * Prefetch: always one call more, and more while the work handed to a worker
 * is expected to take under this many ms (tiny calls then travel by the
 * hundred). Prefetched work cannot be stolen, so this stays small.
 */
const PREFETCH_MS = 2
const PREFETCH_MAX = 256

export interface DispatcherOptions {
  scheduler: WorkScheduler<Task>
  pool: WorkerPool
  /** Tasks handed to a worker beyond its CPU slot. */
  prefetch: number
  /** Starts a task on a worker. */
  run(worker: WorkerHandle, task: Task): void
  /** Whether the task is still wanted (its object was not freed meanwhile). */
  wanted(task: Task): boolean
  /** The node's actors: their calls wait in their actor's order (actors.ts). */
  actors: { ready(task: Task): void; dispatch(): void }
  /** The JSON text of a stored object, for a batched call's `$ref` argument. */
  jsonOf(id: string): string | undefined
  /** Fails a call that cannot run as it was made (a batched call with other than one JSON argument). */
  fail(task: Task, error: SerializedError): void
}

export class Dispatcher {
  readonly #scheduler: WorkScheduler<Task>
  readonly #pool: WorkerPool
  readonly #capacity: number
  readonly #run: (worker: WorkerHandle, task: Task) => void
  readonly #wanted: (task: Task) => boolean
  readonly #actors: DispatcherOptions['actors']
  /** Calls with `memoryMb`, in order. */
  readonly #sized: Task[] = []
  /** Calls of functions with `config.batch`, waiting for their batch to fill. */
  readonly #batcher: Batcher
  #queued = false

  constructor(options: DispatcherOptions) {
    this.#scheduler = options.scheduler
    this.#pool = options.pool
    this.#capacity = 1 + options.prefetch
    this.#run = options.run
    this.#wanted = options.wanted
    this.#actors = options.actors
    this.#batcher = new Batcher({
      jsonOf: options.jsonOf,
      fail: options.fail,
      push: (batch) => {
        this.#scheduler.push(batch, batch.origin, this.#pool.loads())
        this.soon()
      },
    })
  }

  /** Queues a task whose arguments are ready, near the worker whose task made it. */
  enqueue(task: Task): void {
    if (!this.#wanted(task)) return // freed before it could run
    if (task.options.batch && !task.members) {
      this.#batcher.add(task)
      return
    }
    if (task.actor) this.#actors.ready(task)
    else if (task.options.memoryMb !== undefined) this.#sized.push(task)
    else this.#scheduler.push(task, task.origin, this.#pool.loads())
    this.soon()
  }

  /** Queues a task again (a retry), ahead of its turn; not one whose object was freed meanwhile. */
  requeue(task: Task): void {
    if (!this.#wanted(task)) return
    if (task.actor) this.#actors.ready(task)
    else if (task.options.memoryMb !== undefined) this.#sized.unshift(task)
    else this.#scheduler.requeue(task)
    this.soon()
  }

  /** Dispatches once the event loop has taken in everything that is ready. */
  soon(): void {
    if (this.#queued) return
    this.#queued = true
    setImmediate(() => {
      this.#queued = false
      this.#dispatch()
    })
  }

  /**
   * First one task to every worker with a free CPU slot, so that no worker
   * idles while another prefetches; then prefetch, each worker at most its
   * fair share of the queue.
   */
  #dispatch(): void {
    const workers = this.#pool.workers
    if (this.#sized.length > 0) this.#dispatchSized()
    this.#actors.dispatch()
    // While sized threads run calls, the node's CPU slots are counted over all threads.
    const shared = this.#pool.shared
    for (let given = true; given && this.#scheduler.queued > 0; ) {
      given = false
      for (const worker of workers) {
        if (!worker.alive || worker.load >= 1 - 1e-9) continue
        if (shared && this.#pool.totalLoad() >= workers.length - 1e-9) return
        const task = this.#scheduler.take(worker.index)
        if (!task) return
        this.#run(worker, task)
        given = true
      }
    }
    const share = Math.ceil(this.#scheduler.queued / workers.length)
    for (const worker of workers) {
      for (let taken = 0; taken < share && worker.alive && this.#wantsPrefetch(worker); taken++) {
        const task = this.#scheduler.take(worker.index)
        if (!task) return
        this.#run(worker, task)
      }
    }
  }

  /** Runs sized calls in order, while the node has a CPU slot free and a thread of their size. */
  #dispatchSized(): void {
    const cpus = this.#pool.workers.length
    while (this.#sized.length > 0 && this.#pool.totalLoad() < cpus - 1e-9) {
      const task = this.#sized[0] as Task
      if (!this.#wanted(task)) {
        this.#sized.shift()
        continue
      }
      const worker = this.#pool.sizedFor(task.options.memoryMb as number)
      if (!worker) return
      this.#sized.shift()
      this.#run(worker, task)
    }
  }

  /** Calls with `memoryMb` waiting for a sized thread. */
  get sizedQueued(): number {
    return this.#sized.length
  }

  #wantsPrefetch(worker: WorkerHandle): boolean {
    if (worker.load < this.#capacity - 1e-9) return true
    return worker.expectedMs < PREFETCH_MS && worker.assigned.size < PREFETCH_MAX
  }
}
