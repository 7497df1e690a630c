/**
 * The local scheduler of a node: one deque per worker. Nested work goes to the
 * front of the submitting worker's deque (depth first); top-level work to the
 * back of the least busy one; a worker with nothing of its own steals.
 * It only orders work: the node decides when a worker has room for more.
 */
import { RingDeque } from './deque.ts'
import { pickHome, pickVictim } from './steal.ts'

export class WorkScheduler<T> {
  readonly #deques: RingDeque<T>[]
  #queued = 0
  steals = 0

  constructor(workers: number) {
    if (!Number.isInteger(workers) || workers < 1) throw new TypeError('workers must be a positive integer')
    this.#deques = Array.from({ length: workers }, () => new RingDeque<T>())
  }

  get workers(): number {
    return this.#deques.length
  }

  /** Work waiting in all deques. */
  get queued(): number {
    return this.#queued
  }

  lengths(): number[] {
    return this.#deques.map((d) => d.length)
  }

  /** Queues work made by a task on worker `origin` (front of its deque), or top-level work (origin undefined). */
  push(item: T, origin: number | undefined, loads: readonly number[] = []): number {
    this.#queued += 1
    if (origin !== undefined && this.#deques[origin]) {
      this.#deques[origin].pushFront(item)
      return origin
    }
    const home = pickHome(this.lengths(), loads)
    this.#deck(home).pushBack(item)
    return home
  }

  /** Puts work back at the back of a deque, as when its worker died. */
  requeue(item: T): void {
    this.#queued += 1
    this.#deck(pickHome(this.lengths(), [])).pushBack(item)
  }

  /** The next work for `worker`: its own front, else the back of the fullest other deque. */
  take(worker: number): T | undefined {
    const own = this.#deck(worker).popFront()
    if (own !== undefined) {
      this.#queued -= 1
      return own
    }
    const victim = pickVictim(this.lengths(), worker)
    if (victim < 0) return undefined
    const stolen = this.#deck(victim).popBack()
    if (stolen !== undefined) {
      this.#queued -= 1
      this.steals += 1
    }
    return stolen
  }

  /**
   * Gives up to `max` queued items to another node: first those `preferred`
   * (whose big arguments the thief holds), then the oldest of the fullest deques.
   */
  giveAway(max: number, preferred: (item: T) => boolean, allowed: (item: T) => boolean = () => true): T[] {
    const out: T[] = []
    for (const deque of this.#deques) {
      if (out.length >= max) break
      out.push(...deque.removeWhere((t) => allowed(t) && preferred(t), max - out.length))
    }
    // Then the oldest work, from the back of each deque, fullest first.
    const order = this.lengths()
      .map((n, i) => [n, i] as const)
      .sort((a, b) => b[0] - a[0])
    for (const [, i] of order) {
      if (out.length >= max) break
      out.push(...this.#deck(i).removeFromBack(allowed, max - out.length))
    }
    this.#queued -= out.length
    return out
  }

  /** Removes queued work that matches (a freed result, a dead worker's share). */
  removeWhere(match: (item: T) => boolean): T[] {
    const removed = this.#deques.flatMap((d) => d.removeWhere(match))
    this.#queued -= removed.length
    return removed
  }

  #deck(i: number): RingDeque<T> {
    const deque = this.#deques[i]
    if (!deque) throw new RangeError(`no worker ${i}`)
    return deque
  }
}
