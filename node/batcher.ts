/**
 * Batching (a function's `config.batch`, as Ray Serve's `@serve.batch`):
 * calls of the function whose arguments are ready wait here, at most
 * `maxWaitMs` after the first, until `maxSize` have come; then they run as
 * one call whose single argument is the array of their arguments. The array
 * it returns is split back to them in order (splitOutcome).
 */
import { newObjectId } from '../sdk/codec.ts'
import type { SerializedError } from '../sdk/errors.ts'
import type { BatchConfig } from '../sdk/types.ts'
import type { Task } from './task.ts'
import type { Outcome, TaskArg } from './worker/messages.ts'

export interface BatcherOptions {
  /** The JSON text of a stored object (a top-level `$ref` argument, ready by now), if it is JSON. */
  jsonOf(id: string): string | undefined
  /** Queues a batch to run. */
  push(batch: Task): void
  /** Fails a call that cannot be batched. */
  fail(task: Task, error: SerializedError): void
}

interface Open {
  items: string[]
  members: Task[]
  timer: ReturnType<typeof setTimeout> | undefined
}

export class Batcher {
  readonly #options: BatcherOptions
  /** Batches filling up, by function version. */
  readonly #open = new Map<string, Open>()

  constructor(options: BatcherOptions) {
    this.#options = options
  }

  add(task: Task): void {
    const config = task.options.batch as BatchConfig
    const item = this.#itemOf(task)
    if (typeof item !== 'string') {
      this.#options.fail(task, item)
      return
    }
    let open = this.#open.get(task.fn)
    if (!open) {
      open = { items: [], members: [], timer: undefined }
      this.#open.set(task.fn, open)
      if (config.maxSize > 1) {
        open.timer = setTimeout(() => this.#flush(task.fn), config.maxWaitMs)
      }
    }
    open.items.push(item)
    open.members.push(task)
    if (open.members.length >= config.maxSize) this.#flush(task.fn)
  }

  /** The JSON of a call's one argument, or why it cannot be batched. */
  #itemOf(task: Task): string | SerializedError {
    if (task.args.length !== 1) {
      return {
        code: 'BAD_REQUEST',
        message: `${task.fn} batches its calls: each call takes exactly one argument (got ${task.args.length})`,
      }
    }
    const arg = task.args[0] as TaskArg
    const text =
      arg.kind === 'json' ? arg.text : arg.kind === 'ref' ? this.#options.jsonOf(arg.id) : undefined
    if (text === undefined) {
      return {
        code: 'BAD_REQUEST',
        message: `${task.fn} batches its calls: their argument must be JSON, not bytes`,
      }
    }
    return text
  }

  #flush(fn: string): void {
    const open = this.#open.get(fn)
    if (!open) return
    this.#open.delete(fn)
    clearTimeout(open.timer)
    const first = open.members[0] as Task
    const batch: Task = {
      ...first,
      id: newObjectId('b_'),
      args: [{ kind: 'json', text: `[${open.items.join(',')}]` }],
      // A batch runs again after a crash as its least patient call allows.
      maxRetries: Math.min(...open.members.map((m) => m.maxRetries)),
      attempts: 0,
      waitingBytes: 0,
      members: open.members,
    }
    this.#options.push(batch)
  }
}

/** Each member's outcome of a batch's: its item of the returned array, or the batch's error. */
export function splitOutcome(batch: Task, outcome: Outcome): Outcome[] {
  const members = batch.members as Task[]
  if ('error' in outcome) return members.map(() => outcome)
  const fail = (message: string): Outcome[] =>
    members.map(() => ({ error: { code: 'FUNCTION_ERROR', name: 'TypeError', message } }))
  if (outcome.value.kind !== 'json')
    return fail(`${batch.fn} batches its calls: it must return an array, not bytes`)
  const items = JSON.parse(outcome.value.text) as unknown
  if (!Array.isArray(items) || items.length !== members.length) {
    const got = Array.isArray(items) ? `${items.length} items` : 'no array'
    return fail(
      `${batch.fn} batches its calls: it returned ${got} for ${members.length} calls (one per call, in order)`,
    )
  }
  return items.map((item) => ({
    value: { kind: 'json', text: JSON.stringify(item === undefined ? null : item) },
  }))
}
