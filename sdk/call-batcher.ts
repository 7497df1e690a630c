/**
 * Gathers the calls made in one turn of the event loop into one request
 * (POST /v1/calls), so that a driver submitting thousands of calls costs the
 * gateway a few requests, not thousands. A lone call goes to its function's
 * own invoke route; if a batch is refused, its calls are sent one by one, so
 * that each gets its own answer. A gateway whose queues are full (429) gets
 * the same request again after a backoff, up to 5 s apart, until it takes it:
 * the calls' ids make a repeat harmless.
 */
import { backoffDelay } from './backoff.ts'
import { ID_HEADER } from './codec.ts'
import { MagpieError } from './errors.ts'
import type { Transport } from './transport.ts'
import type { CallOptions } from './types.ts'

export interface PendingCall {
  id: string
  fn: string
  /** Arguments, JSON-encodable (ObjectRefs serialize as `{"$ref"}`). */
  args: readonly unknown[]
  options: CallOptions
}

interface Queued {
  call: PendingCall
  resolve: () => void
  reject: (err: unknown) => void
}

export class CallBatcher {
  readonly #transport: Transport
  #queue: Queued[] = []

  constructor(transport: Transport) {
    this.#transport = transport
  }

  /** Resolves once the gateway has accepted the call (or rejects with why it did not). */
  add(call: PendingCall): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.#queue.length === 0) queueMicrotask(() => this.#flush())
      this.#queue.push({ call, resolve, reject })
    })
  }

  #flush(): void {
    const batch = this.#queue
    this.#queue = []
    if (batch.length === 1) {
      this.#sendOne(batch[0] as Queued)
      return
    }
    this.#sendBatch(batch, 0)
  }

  #sendBatch(batch: Queued[], attempt: number): void {
    const body = batch.map(({ call }) => {
      const wire: Record<string, unknown> = { function: call.fn, args: call.args, id: call.id }
      if (Object.keys(call.options).length > 0) wire.options = call.options
      return wire
    })
    this.#transport.json('POST', '/v1/calls', body).then(
      () => {
        for (const q of batch) q.resolve()
      },
      (err: unknown) => {
        if (queueFull(err)) {
          setTimeout(() => this.#sendBatch(batch, attempt + 1), retryDelay(attempt))
          return
        }
        if (!(err instanceof MagpieError) || err.status >= 500) {
          for (const q of batch) q.reject(err)
          return
        }
        // One bad call refuses the whole batch: send each alone to learn which.
        for (const q of batch) this.#sendOne(q)
      },
    )
  }

  #sendOne(queued: Queued, attempt = 0): void {
    const { call, resolve, reject } = queued
    const body = JSON.stringify(
      Object.keys(call.options).length === 0 ? call.args : { args: call.args, options: call.options },
    )
    this.#transport
      .send('POST', `/v1/functions/${encodeURIComponent(call.fn)}/invoke`, body, {
        'content-type': 'application/json',
        [ID_HEADER]: call.id,
      })
      .then((reply) => reply.discard())
      .then(resolve, (err: unknown) => {
        if (queueFull(err)) setTimeout(() => this.#sendOne(queued, attempt + 1), retryDelay(attempt))
        else reject(err)
      })
  }
}

function queueFull(err: unknown): boolean {
  return err instanceof MagpieError && err.code === 'QUEUE_FULL'
}

function retryDelay(attempt: number): number {
  return backoffDelay(attempt, { baseMs: 100, maxMs: 5000 })
}
