/** What a node counts of its work: calls by function and outcome, run times, bytes between threads. */
import { type EncodedValue, sizeOf } from '../sdk/codec.ts'
import type { TaskArg } from './worker/messages.ts'

/** Expected run time of a function never seen before, in ms. */
const UNKNOWN_MS = 1

/** The function a call's ref names, without its version. */
function nameOf(ref: string): string {
  const at = ref.indexOf('@')
  return at < 0 ? ref : ref.slice(0, at)
}

export class NodeCounters {
  /** Finished and failed calls, by function. */
  readonly #outcomes = new Map<string, { finished: number; failed: number }>()
  /** Moving average of run times in ms, by function. */
  readonly #durations = new Map<string, number>()
  readonly #threadBytes = { copied: 0, shared: 0 }
  /** Calls taken from other nodes, and given to them. */
  readonly stolen = { in: 0, out: 0 }
  /** Objects copied here from other nodes. */
  readonly fetched = { count: 0, bytes: 0 }

  /** Counts a value copied here from another node. */
  copiedHere(value: EncodedValue): void {
    this.fetched.count += 1
    this.fetched.bytes += sizeOf(value)
  }

  /** Counts a call of `ref` (a function, or `name@version`: counted by name, whatever its version). */
  outcome(ref: string, failed: boolean): void {
    const fn = nameOf(ref)
    let counts = this.#outcomes.get(fn)
    if (!counts) {
      counts = { finished: 0, failed: 0 }
      this.#outcomes.set(fn, counts)
    }
    if (failed) counts.failed += 1
    else counts.finished += 1
  }

  /** Keeps a moving average of each function's run time, for prefetching. */
  ranFor(fn: string, ms: number): void {
    const before = this.#durations.get(fn)
    this.#durations.set(fn, before === undefined ? ms : (before + ms) / 2)
  }

  expectedMs(fn: string): number {
    return this.#durations.get(fn) ?? UNKNOWN_MS
  }

  /** Counts what a message between threads carries: JSON text is copied, shared memory is not. */
  crossing(values: Iterable<TaskArg>): void {
    for (const value of values) {
      if (value.kind === 'json') this.#threadBytes.copied += value.text.length
      else if (value.kind === 'bytes') {
        if (value.bytes.buffer instanceof SharedArrayBuffer)
          this.#threadBytes.shared += value.bytes.byteLength
        else this.#threadBytes.copied += value.bytes.byteLength
      }
    }
  }

  outcomes(): Record<string, { finished: number; failed: number }> {
    return Object.fromEntries([...this.#outcomes].map(([fn, c]) => [fn, { ...c }]))
  }

  threadBytes(): { copied: number; shared: number } {
    return { ...this.#threadBytes }
  }
}
