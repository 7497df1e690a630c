/**
 * Keeping a node's memory near its store's bound. Two things hold memory the
 * store no longer counts: values it let go of, which stay until the garbage
 * collector finds them unused (and V8 runs it by the size of its own heap,
 * which big values in shared memory barely touch), and objects that worker
 * threads hold through ObjectRefs they have already dropped, until their
 * collector reports it. So: once much has been let go, the node and its
 * workers collect; once the store is half full, workers with handles do.
 */
import { collectGarbage } from './gc.ts'

/** Past this share of the store's memory, workers are asked to let go of dead handles (at most every FILL_GAP_MS). */
const FILL_SHARE = 0.5
const FILL_GAP_MS = 50
/** After a quarter of the store's memory, 16 to 64 MiB, has been let go, everyone collects. */
const RELEASED_MIN = 16 * 1024 * 1024
const RELEASED_MAX = 64 * 1024 * 1024

export interface MemoryPressureOptions {
  /** The store's memory bound, in bytes. */
  storeBytes: number
  /** Bytes of values in the store's memory now. */
  inMemory(): number
  /** Asks worker threads to collect: all of them, or those holding handles. */
  collectWorkers(which: 'all' | 'holding'): void
}

export class MemoryPressure {
  readonly #options: MemoryPressureOptions
  readonly #releasedLimit: number
  #released = 0
  #collectQueued = false
  #lastFill = 0

  constructor(options: MemoryPressureOptions) {
    this.#options = options
    this.#releasedLimit = Math.max(RELEASED_MIN, Math.min(RELEASED_MAX, options.storeBytes / 4))
  }

  /** The store let go of `bytes`: once that adds up to much, everyone collects. */
  released(bytes: number): void {
    this.#released += bytes
    if (this.#released < this.#releasedLimit || this.#collectQueued) return
    this.#collectQueued = true
    setImmediate(() => {
      this.#collectQueued = false
      this.#released = 0
      collectGarbage()
      this.#options.collectWorkers('all')
    })
  }

  /** A value went into the store: past half full, workers let go of handles they no longer use. */
  filled(): void {
    if (this.#options.inMemory() < this.#options.storeBytes * FILL_SHARE) return
    const now = performance.now()
    if (now - this.#lastFill < FILL_GAP_MS) return
    this.#lastFill = now
    this.#options.collectWorkers('holding')
  }
}
