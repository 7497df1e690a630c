/**
 * A node's worker threads: one per CPU, each replaced when it dies, told of
 * the deployed functions as they change, and the handles each holds to
 * objects (a handle pins its object while its thread lives). Calls that ask
 * for a heap of their own size (`memoryMb`) run in sized threads beside
 * them, made when first needed (at most one per CPU for each size) and
 * ended after a while unused; a sized thread that dies is not replaced.
 * Actors live in actor threads (see actors.ts), at most one per CPU, made
 * as actors come, each new actor on the next of them in turn.
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
  /** Threads for actors, at most (default: four per CPU, at least 4); past it, actors share them. */
  actorThreads?: number | undefined
  /** How many live actors a thread holds. */
  actorsOn?: (worker: WorkerHandle) => number
  /** Whether the node is full (see room.ts). */
  room: Int32Array
  messages(worker: WorkerHandle, batch: FromWorker[]): void
  /** A thread died: what it ran is the caller's to settle; a new thread takes its place. */
  crashed(worker: WorkerHandle, error: Error | undefined): void
  /** A replacement thread is up and takes work. */
  replaced(worker: WorkerHandle): void
}

/** A sized thread unused for this long is ended, and so is an actor thread with no actor left. */
const SIZED_IDLE_MS = 30_000

/** Actor threads per CPU, by default. */
const ACTOR_THREADS_PER_CPU = 4

export class WorkerPool {
  readonly workers: WorkerHandle[] = []
  /** Threads of a given heap size, for calls with `memoryMb`. */
  readonly sized: WorkerHandle[] = []
  /** Threads that hold actors. */
  readonly hosts: WorkerHandle[] = []
  readonly #options: WorkerPoolOptions
  readonly #offFunctions: () => void
  /** When each sized thread was last seen with nothing to do. */
  readonly #idleSince = new Map<WorkerHandle, number>()
  readonly #reaper: ReturnType<typeof setInterval>
  #nextIndex: number
  #closing = false

  constructor(options: WorkerPoolOptions) {
    this.#options = options
    for (let i = 0; i < options.cpus; i++) this.workers.push(this.#spawn(i, options.workerMemoryMb))
    this.#nextIndex = options.cpus
    this.#offFunctions = options.functions.onChange(() => {
      const { names, urls } = this.#catalog()
      for (const w of this.all()) w.send({ type: 'functions', names, urls })
    })
    this.#reaper = setInterval(() => this.#reapIdle(), SIZED_IDLE_MS / 3)
    this.#reaper.unref()
  }

  /** Every thread: one per CPU, then the sized ones. */
  all(): WorkerHandle[] {
    return this.sized.length + this.hosts.length === 0
      ? this.workers
      : [...this.workers, ...this.sized, ...this.hosts]
  }

  /** Whether sized threads share the node's CPU slots now (actor threads hold none: see actors.ts). */
  get shared(): boolean {
    return this.sized.length > 0
  }

  /**
   * The thread for a new actor: one with no actor, made while there are
   * fewer than `actorThreads`, so that a long synchronous method holds back
   * no other actor; past that, the thread with the fewest actors.
   */
  actorHost(): WorkerHandle {
    const actorsOn = this.#options.actorsOn ?? (() => 0)
    let fewest: WorkerHandle | undefined
    let count = Number.POSITIVE_INFINITY
    for (const host of this.hosts) {
      const n = actorsOn(host)
      if (host.alive && n < count) {
        fewest = host
        count = n
      }
    }
    if (fewest && count === 0) return fewest
    const most = this.#options.actorThreads ?? Math.max(4, ACTOR_THREADS_PER_CPU * this.#options.cpus)
    if (fewest && this.hosts.length >= most) return fewest
    const host = this.#spawn(this.#nextIndex++, this.#options.workerMemoryMb)
    this.hosts.push(host)
    return host
  }

  /**
   * A thread of `heapMb` with a free CPU slot, made if none is and fewer than
   * one per CPU of that size exist; undefined if all of them are busy.
   */
  sizedFor(heapMb: number): WorkerHandle | undefined {
    let count = 0
    for (const w of this.sized) {
      if (w.heapMb !== heapMb || !w.alive) continue
      if (w.load < 1 - 1e-9) return w
      count++
    }
    if (count >= this.#options.cpus) return undefined
    const worker = this.#spawn(this.#nextIndex++, heapMb)
    this.sized.push(worker)
    return worker
  }

  /** CPU share taken now by calls on all threads. */
  totalLoad(): number {
    let load = 0
    for (const w of this.workers) load += w.load
    for (const w of this.sized) load += w.load
    for (const w of this.hosts) load += w.load
    return load
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
    for (const w of this.all()) if (which === 'all' || w.holds.size > 0) w.send({ type: 'collect' })
  }

  get running(): number {
    let running = 0
    for (const w of this.all()) running += w.assigned.size
    return running
  }

  loads(): number[] {
    return this.workers.map((w) => w.load)
  }

  async close(): Promise<void> {
    this.#closing = true
    this.#offFunctions()
    clearInterval(this.#reaper)
    await Promise.all(this.all().map((w) => w.terminate()))
  }

  #catalog(): { names: string[]; urls: string[] } {
    const { functions } = this.#options
    const names = functions.names()
    return { names, urls: names.flatMap((n) => functions.get(n)?.url ?? []) }
  }

  #spawn(index: number, heapMb: number | undefined): WorkerHandle {
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
      heapMb,
    )
  }

  /** Ends the sized threads that had nothing to do for a while, and the actor threads left without actors. */
  #reapIdle(): void {
    const now = Date.now()
    const actorsOn = this.#options.actorsOn ?? (() => 1)
    for (const w of [...this.sized, ...this.hosts]) {
      if (w.assigned.size > 0 || w.holds.size > 0 || (this.hosts.includes(w) && actorsOn(w) > 0)) {
        this.#idleSince.delete(w)
        continue
      }
      const since = this.#idleSince.get(w)
      if (since === undefined) this.#idleSince.set(w, now)
      else if (now - since >= SIZED_IDLE_MS) {
        this.#drop(w)
        void w.terminate()
      }
    }
  }

  #drop(worker: WorkerHandle): void {
    const at = this.sized.indexOf(worker)
    if (at >= 0) this.sized.splice(at, 1)
    const host = this.hosts.indexOf(worker)
    if (host >= 0) this.hosts.splice(host, 1)
    this.#idleSince.delete(worker)
  }

  #exited(worker: WorkerHandle, error: Error | undefined): void {
    if (this.#closing) return
    this.#options.crashed(worker, error)
    // Handles die with their thread.
    for (const id of worker.holds) this.#options.store.unpin(id)
    worker.holds.clear()
    if (worker.index >= this.#options.cpus) {
      // A sized thread is made again when a call needs one.
      this.#drop(worker)
      this.#options.replaced(worker)
      return
    }
    const replacement = this.#spawn(worker.index, this.#options.workerMemoryMb)
    this.workers[worker.index] = replacement
    replacement.online.then(() => this.#options.replaced(replacement))
  }
}
