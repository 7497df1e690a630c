/**
 * Which objects a worker thread still holds handles to. Every ObjectRef the
 * thread makes or decodes is counted per id; when the garbage collector takes
 * the last one of an id, the node is told, and may free the object. A thread
 * that goes idle, or that the node asks to because its store fills up,
 * collects garbage, so that dead handles do not keep objects alive for long.
 */
import type { ObjectRef } from '../../sdk/codec.ts'
import { collectGarbage } from '../gc.ts'
import type { FromWorker } from './messages.ts'

/** How long a thread stays idle before it collects garbage, and how often it may. */
const IDLE_COLLECT_MS = 100
const MIN_COLLECT_GAP_MS = 50

/** What keeps an object alive while reachable: an ObjectRef, or an actor handle (its id is the actor's). */
type Handle = Pick<ObjectRef, 'id'>

export class RefTracker {
  readonly #counts = new Map<string, number>()
  readonly #registry = new FinalizationRegistry<string>((id) => this.#drop(id))
  readonly #send: (message: FromWorker) => void
  #lastCollect = 0
  #idleTimer: ReturnType<typeof setTimeout> | undefined

  constructor(send: (message: FromWorker) => void) {
    this.#send = send
  }

  /**
   * A handle to an object made here (a call's or a put's ref, or the handle
   * of an actor made here): the node counts this thread as a holder already.
   */
  made(ref: Handle): void {
    this.#counts.set(ref.id, (this.#counts.get(ref.id) ?? 0) + 1)
    this.#registry.register(ref, ref.id)
  }

  /** A handle decoded from a value (a ref, or an actor's): the node learns that this thread holds the object. */
  decoded(ref: Handle): void {
    const count = this.#counts.get(ref.id) ?? 0
    if (count === 0) this.#send({ type: 'hold', id: ref.id })
    this.#counts.set(ref.id, count + 1)
    this.#registry.register(ref, ref.id)
  }

  /** Ids with live handles here. */
  get size(): number {
    return this.#counts.size
  }

  /**
   * Collects garbage, so that dead handles are reported and dead views of
   * shared memory let go: now, or once MIN_COLLECT_GAP_MS have passed since the last time.
   */
  collect(): void {
    const wait = this.#lastCollect + MIN_COLLECT_GAP_MS - performance.now()
    if (wait > 0) {
      this.#later(wait)
      return
    }
    this.#lastCollect = performance.now()
    collectGarbage()
  }

  /** The thread has nothing to run: collect soon, unless work comes first. */
  idle(): void {
    if (this.#counts.size > 0) this.#later(IDLE_COLLECT_MS)
  }

  #later(ms: number): void {
    if (this.#idleTimer) return
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = undefined
      this.collect()
    }, ms)
    this.#idleTimer.unref()
  }

  /** Work came in: no idle collection. */
  busy(): void {
    if (!this.#idleTimer) return
    clearTimeout(this.#idleTimer)
    this.#idleTimer = undefined
  }

  #drop(id: string): void {
    const count = (this.#counts.get(id) ?? 1) - 1
    if (count > 0) {
      this.#counts.set(id, count)
      return
    }
    this.#counts.delete(id)
    this.#send({ type: 'release', id })
  }
}
