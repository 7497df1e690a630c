/**
 * A node's worker threads: one per CPU, each replaced when it dies, told of
 * the deployed functions as they change, and the handles each holds to
 * objects (a handle pins its object while its thread lives).
 */
import type { ObjectStore } from './store/object-store.ts'
import type { FunctionCatalog } from './task.ts'
import type { FromWorker } from './worker/messages.ts'
import { WorkerHandle } from './worker/worker-handle.ts'

export interface WorkerPoolOptions {
  cpus: number
  /** Prefix of the ids of objects made on this node's threads. */
  idPrefix: string
  functions: FunctionCatalog
  store: ObjectStore
  /** The most heap a worker thread may use, in MiB (default: V8's own limit). */
  workerMemoryMb?: number | undefined
  /** Bytes one call may write to stdout and stderr. */
  maxCallOutputBytes: number
  /** Whether the node is full (see room.ts). */
  room: Int32Array
  messages(worker: WorkerHandle, batch: FromWorker[]): void
  /** A thread died: what it ran is the caller's to settle; a new thread takes its place. */
  crashed(worker: WorkerHandle, error: Error | undefined): void
  /** A replacement thread is up and takes work. */
  replaced(worker: WorkerHandle): void
}

export class WorkerPool {
  readonly workers: WorkerHandle[] = []
  readonly #options: WorkerPoolOptions
  readonly #offFunctions: () => void
  #closing = false

  constructor(options: WorkerPoolOptions) {
    this.#options = options
    for (let i = 0; i < options.cpus; i++) this.workers.push(this.#spawn(i))
    this.#offFunctions = options.functions.onChange(() => {
      const { names, urls } = this.#catalog()
      for (const w of this.workers) w.send({ type: 'functions', names, urls })
    })
  }

  /** Resolves once every thread is up. */
  async ready(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.online))
  }

  /** A thread holds a handle to the object: it stays while the thread does. */
  hold(worker: WorkerHandle, id: string): void {
    if (!worker.holds.has(id) && this.#options.store.pin(id)) worker.holds.add(id)
  }

  release(worker: WorkerHandle, id: string): void {
    if (worker.holds.delete(id)) this.#options.store.unpin(id)
  }

  /** Asks threads to collect garbage, so that they report the handles they dropped. */
  collect(which: 'all' | 'holding'): void {
    for (const w of this.workers) if (which === 'all' || w.holds.size > 0) w.send({ type: 'collect' })
  }

  get running(): number {
    let running = 0
    for (const w of this.workers) running += w.assigned.size
    return running
  }

  loads(): number[] {
    return this.workers.map((w) => w.load)
  }

  async close(): Promise<void> {
    this.#closing = true
    this.#offFunctions()
    await Promise.all(this.workers.map((w) => w.terminate()))
  }

  #catalog(): { names: string[]; urls: string[] } {
    const { functions } = this.#options
    const names = functions.names()
    return { names, urls: names.flatMap((n) => functions.get(n)?.url ?? []) }
  }

  #spawn(index: number): WorkerHandle {
    return new WorkerHandle(
      {
        index,
        idPrefix: this.#options.idPrefix,
        maxCallOutput: this.#options.maxCallOutputBytes,
        room: this.#options.room,
        threads: this.#options.cpus,
        ...this.#catalog(),
      },
      {
        messages: (handle, batch) => this.#options.messages(handle, batch),
        exit: (handle, error) => this.#exited(handle, error),
      },
      this.#options.workerMemoryMb,
    )
  }

  #exited(worker: WorkerHandle, error: Error | undefined): void {
    if (this.#closing) return
    this.#options.crashed(worker, error)
    // Handles die with their thread.
    for (const id of worker.holds) this.#options.store.unpin(id)
    worker.holds.clear()
    const replacement = this.#spawn(worker.index)
    this.workers[worker.index] = replacement
    replacement.online.then(() => this.#options.replaced(replacement))
  }
}
