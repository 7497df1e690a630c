/**
 * The scheduler's side of one worker thread: batches messages to it, and keeps
 * the tasks it was handed and the share of its CPU slot they take.
 */
import { Worker } from 'node:worker_threads'
import type { FromWorker, ToWorker, WorkerData } from './messages.ts'

/** From the sources, a loader that runs TypeScript; from a build, the bundled worker beside this file. */
const ENTRY = import.meta.url.endsWith('.ts')
  ? new URL('./entry.mjs', import.meta.url)
  : new URL('./worker.js', import.meta.url)

/** A task as the scheduler tracks it on a worker. */
export interface Assigned {
  readonly id: string
  readonly weight: number
  /** Expected run time, in ms, from earlier calls of the same function. */
  readonly expectedMs: number
  /** Gets and waits of this task still outstanding: while any are, it takes no CPU share. */
  waiting: number
}

export interface WorkerHandleEvents {
  messages(handle: WorkerHandle, batch: FromWorker[]): void
  exit(handle: WorkerHandle, error: Error | undefined): void
}

export class WorkerHandle {
  readonly index: number
  /** The most heap the thread may use, in MiB (undefined: V8's own limit). */
  readonly heapMb: number | undefined
  readonly #worker: Worker
  readonly online: Promise<void>
  /** Tasks handed to this worker and not done, by result id. */
  readonly assigned = new Map<string, Assigned>()
  /** CPU share of assigned tasks that are not waiting on other objects. */
  load = 0
  /** Expected run time of assigned tasks that are not waiting, in ms. */
  expectedMs = 0
  alive = true
  /** Objects this thread holds handles to (each pins its object once). */
  readonly holds = new Set<string>()
  #outbox: ToWorker[] = []
  #flushQueued = false
  #nextPing = 1
  readonly #pings = new Map<number, ReturnType<typeof setTimeout>>()

  /** `heapMb`: the most heap the thread may use (V8's old generation); past it the thread dies, not the node. */
  constructor(data: WorkerData, events: WorkerHandleEvents, heapMb?: number) {
    this.index = data.index
    this.heapMb = heapMb
    this.#worker = new Worker(ENTRY, {
      workerData: data,
      stdout: false,
      stderr: false,
      ...(heapMb === undefined ? {} : { resourceLimits: { maxOldGenerationSizeMb: heapMb } }),
    })
    this.online = new Promise((resolve, reject) => {
      this.#worker.once('online', resolve)
      this.#worker.once('error', reject)
    })
    this.online.catch(() => {})
    let failure: Error | undefined
    this.#worker.on('message', (batch: FromWorker[]) => events.messages(this, batch))
    this.#worker.on('error', (err) => {
      failure = err
    })
    this.#worker.on('exit', () => {
      this.alive = false
      events.exit(this, failure)
    })
  }

  send(message: ToWorker): void {
    if (!this.alive) return
    this.#outbox.push(message)
    if (!this.#flushQueued) {
      this.#flushQueued = true
      queueMicrotask(() => this.#flush())
    }
  }

  #flush(): void {
    this.#flushQueued = false
    if (!this.alive || this.#outbox.length === 0) return
    const batch = this.#outbox
    this.#outbox = []
    this.#worker.postMessage(batch)
  }

  /** Hands a task to this worker's accounting (the caller sends it). */
  assign(task: Assigned): void {
    this.assigned.set(task.id, task)
    this.load += task.weight
    this.expectedMs += task.expectedMs
  }

  /** Marks a task as waiting on objects (or done waiting, unblock): its CPU share is freed meanwhile. */
  block(id: string): void {
    const task = this.assigned.get(id)
    if (task && task.waiting++ === 0) {
      this.load -= task.weight
      this.expectedMs -= task.expectedMs
    }
  }

  unblock(id: string): void {
    const task = this.assigned.get(id)
    if (task && --task.waiting === 0) {
      this.load += task.weight
      this.expectedMs += task.expectedMs
    }
  }

  /** Forgets a finished task; returns it if it was here. */
  release(id: string): Assigned | undefined {
    const task = this.assigned.get(id)
    if (!task) return undefined
    this.assigned.delete(id)
    if (task.waiting === 0) {
      this.load -= task.weight
      this.expectedMs -= task.expectedMs
    }
    if (this.assigned.size === 0) {
      // Keep rounding errors of the running sums from piling up.
      this.load = 0
      this.expectedMs = 0
    }
    return task
  }

  /** Pings the thread; calls `unresponsive` if it does not answer within `ms`. */
  probe(ms: number, unresponsive: () => void): void {
    const req = this.#nextPing++
    this.#pings.set(
      req,
      setTimeout(() => {
        this.#pings.delete(req)
        if (this.alive) unresponsive()
      }, ms),
    )
    this.send({ type: 'ping', req })
  }

  answered(req: number): void {
    clearTimeout(this.#pings.get(req))
    this.#pings.delete(req)
  }

  /** Stops the thread; its 'exit' event follows, as for a crash. */
  async terminate(): Promise<void> {
    for (const timer of this.#pings.values()) clearTimeout(timer)
    this.#pings.clear()
    await this.#worker.terminate()
  }
}
