/**
 * Streams a call's lines as they come (`?follow=1` of its logs, on the
 * gateway and between processes): its `follow` goes to Backend.logs or
 * LocalNode.readLogs, and `pipe` writes what comes until the call settles or
 * the reader goes away.
 */
import type { StreamingApi } from 'hono/utils/stream'
import type { LogLine, LogsFollow } from '../call-logs.ts'

export class FollowedLogs {
  readonly #reader = new AbortController()
  #pending: LogLine[] = []
  #ended = false
  #wake = () => {}

  readonly follow: LogsFollow = {
    signal: this.#reader.signal,
    line: (line) => {
      this.#pending.push(line)
      this.#wake()
    },
    end: () => {
      this.#ended = true
      this.#wake()
    },
  }

  /** Stops following (the call is unknown, or its lines are gone). */
  stop(): void {
    this.#reader.abort()
    this.#wake()
  }

  /** Writes the lines as they come, as `format` shows them, until the call settles or the reader goes. */
  async pipe(out: StreamingApi, format: (lines: LogLine[]) => string): Promise<void> {
    out.onAbort(() => this.stop())
    while (!this.#reader.signal.aborted) {
      if (this.#pending.length > 0) {
        const batch = this.#pending
        this.#pending = []
        await out.write(format(batch))
      } else if (this.#ended) break
      else await new Promise<void>((resolve) => (this.#wake = resolve))
    }
    this.stop()
  }
}
