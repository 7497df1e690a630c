/**
 * Backpressure: how many calls may be unfinished at once, and how many bytes
 * of arguments may wait with them. Past either bound, new calls from outside
 * are refused with QUEUE_FULL (429, with Retry-After) until some finish.
 * Calls made inside functions are never refused (a parent waiting for
 * children that could not be queued would wait forever): the thread that
 * makes one waits while the node is full (room.ts), and they count toward
 * the bounds, so that a tree that fans out holds back new work.
 *
 * The defaults come from the machine's memory: one call for every 16 KiB
 * of it, at most a million (a call waiting in a node costs it 2 to 4 KiB,
 * measured with `npm run bench:overload`: a quarter of memory at most), and a
 * tenth of it for the arguments of waiting calls.
 */

import { QueueFullError } from '../sdk/errors.ts'
import { memoryLimit } from './limits.ts'
import type { TaskArg } from './worker/messages.ts'

/** What a refused client is told to wait before trying again, in seconds. */
export const RETRY_AFTER_S = 1

export interface AdmissionLimits {
  /** Calls unfinished at once (default: memory / 16 KiB, at most 1,000,000). */
  maxQueued?: number | undefined
  /** Bytes of arguments of calls not started (default: a tenth of memory). */
  maxQueuedBytes?: number | undefined
}

/** The bounds for a machine with `memory` bytes. */
export function defaultLimits(memory = memoryLimit()): Required<{ [K in keyof AdmissionLimits]: number }> {
  return {
    maxQueued: Math.min(1_000_000, Math.floor(memory / 16_384)),
    maxQueuedBytes: Math.floor(memory / 10),
  }
}

/** About the bytes a call's arguments take while it waits (values given inline; refs are the store's). */
export function argumentBytes(args: readonly TaskArg[]): number {
  let bytes = 0
  // JSON text by its length: counting UTF-8 bytes exactly would scan it, on every call.
  for (const arg of args)
    bytes += arg.kind === 'json' ? arg.text.length : arg.kind === 'bytes' ? arg.bytes.byteLength : 0
  return bytes
}

export class Admission {
  readonly #maxQueued: number
  readonly #maxBytes: number
  readonly #now: () => { calls: number; bytes: number }

  /** `now`: the calls unfinished and the bytes of arguments waiting, as they stand. */
  constructor(limits: AdmissionLimits, now: () => { calls: number; bytes: number }) {
    const defaults = defaultLimits()
    this.#maxQueued = limits.maxQueued ?? defaults.maxQueued
    this.#maxBytes = limits.maxQueuedBytes ?? defaults.maxQueuedBytes
    if (!(Number.isInteger(this.#maxQueued) && this.#maxQueued >= 1))
      throw new TypeError('maxQueued must be a positive integer')
    if (!(this.#maxBytes > 0)) throw new TypeError('maxQueuedBytes must be a positive number')
    this.#now = now
  }

  /** How many more calls may be unfinished now (0 while the arguments waiting are past their bound). */
  room(): number {
    const now = this.#now()
    return now.bytes > this.#maxBytes ? 0 : this.#maxQueued - now.calls
  }

  /** Throws QueueFullError if `calls` more calls with `bytes` of arguments would pass a bound. */
  admit(calls: number, bytes: number): void {
    const now = this.#now()
    if (now.calls + calls > this.#maxQueued) {
      throw new QueueFullError(
        `${now.calls} calls are unfinished, the most is ${this.#maxQueued}: try again later`,
      )
    }
    // An empty queue takes a call however big: else a call over the bound could never run.
    if (bytes > 0 && now.bytes > 0 && now.bytes + bytes > this.#maxBytes) {
      throw new QueueFullError(
        `${now.bytes} bytes of arguments wait already, the most is ${this.#maxBytes}: try again later`,
      )
    }
  }
}
