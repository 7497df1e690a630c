/**
 * A simulated clock for the scheduler simulator: events in a binary heap by
 * time (then by the order they were made), run one at a time, the clock
 * jumping to each. It is the `Clock` the real Thief takes, so the thief's
 * own timers run on simulated time.
 */
import type { Clock } from '../../cluster/node/thief.ts'
import { seeded } from '../../sdk/seeded.ts'

interface SimTimer {
  at: number
  seq: number
  fn: () => void
  live: boolean
  /** It settles a promise: the reactions run before the next event. */
  settles: boolean
}

export class SimClock implements Clock {
  #now = 0
  #seq = 0
  readonly #heap: SimTimer[] = []
  readonly #random: () => number
  /** Events run so far. */
  events = 0

  constructor(seed: number) {
    this.#random = seeded(seed)
  }

  now(): number {
    return this.#now
  }

  setTimeout(fn: () => void, ms: number): unknown {
    return this.after(ms, fn)
  }

  clearTimeout(timer: unknown): void {
    if (timer) (timer as SimTimer).live = false
  }

  soon(fn: () => void): void {
    this.after(0, fn)
  }

  random(): number {
    return this.#random()
  }

  /** Runs `fn` in `ms` of simulated time; `settles` if it settles a promise. */
  after(ms: number, fn: () => void, settles = false): SimTimer {
    const timer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn, live: true, settles }
    const heap = this.#heap
    heap.push(timer)
    let i = heap.length - 1
    while (i > 0) {
      const up = (i - 1) >> 1
      if (!before(timer, heap[up] as SimTimer)) break
      heap[i] = heap[up] as SimTimer
      i = up
    }
    heap[i] = timer
    return timer
  }

  /** Runs events until `done()` or none are left. */
  async run(done: () => boolean): Promise<void> {
    while (this.#heap.length > 0 && !done()) {
      const timer = this.#pop()
      if (!timer.live) continue
      this.#now = timer.at
      this.events += 1
      timer.fn()
      // A settled promise's reactions (the thief's awaits) run before the next event.
      if (timer.settles) await new Promise<void>((resolve) => setImmediate(resolve))
    }
  }

  #pop(): SimTimer {
    const heap = this.#heap
    const top = heap[0] as SimTimer
    const last = heap.pop() as SimTimer
    if (heap.length > 0) {
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        const r = l + 1
        let least = last
        let at = -1
        if (l < heap.length && before(heap[l] as SimTimer, least)) {
          least = heap[l] as SimTimer
          at = l
        }
        if (r < heap.length && before(heap[r] as SimTimer, least)) {
          least = heap[r] as SimTimer
          at = r
        }
        if (at < 0) break
        heap[i] = least
        i = at
      }
      heap[i] = last
    }
    return top
  }
}

function before(a: SimTimer, b: SimTimer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq)
}
