/**
 * What the head keeps of the calls and objects it owns, in its state store,
 * so that a head started again on the same state serves them again: each
 * call as it was placed (kept while it is in flight, and while its result is
 * held on a node, to make it again should that node die), and each settled
 * object: where its value is held (or the value, if small JSON), or its error.
 */
import { z } from 'zod'
import type { TaskSpec } from '../../node/task.ts'
import type { EncodedValue } from '../../sdk/codec.ts'
import { Call, fromWireArg, serializedError, toWireArg } from '../protocol.ts'
import type { DirectoryJournal, DirectoryRecord } from './directory.ts'
import type { StateStore } from './state/store.ts'

/** A call as kept: as placed on a node, with its TTL. */
const KeptCall = Call.extend({ ttlMs: z.number().positive().optional() })

/** A settled object as kept. */
const KeptObject = z.object({
  fn: z.string().nullable(),
  status: z.enum(['ready', 'failed', 'cancelled']),
  node: z.string().optional(),
  size: z.number().nonnegative(),
  contentType: z.string().nullable(),
  /** The JSON text of a small value kept by the head. */
  value: z.string().optional(),
  error: serializedError.optional(),
  attempts: z.number().int().nonnegative(),
  ttlMs: z.number().positive(),
  createdAt: z.number(),
})
export type KeptObject = z.infer<typeof KeptObject>

/** A kept call, read back: undefined if it does not parse (it is then dropped, with a warning by the caller). */
export function readKeptCall(
  id: string,
  text: string,
): { spec: TaskSpec; attempts: number; ttlMs: number | undefined } | undefined {
  const parsed = parse(KeptCall, text)
  if (!parsed || parsed.id !== id) return undefined
  return {
    spec: { id, fn: parsed.fn, args: parsed.args.map(fromWireArg), options: parsed.options },
    attempts: Math.max(1, parsed.epoch),
    ttlMs: parsed.ttlMs,
  }
}

export function readKeptObject(text: string): KeptObject | undefined {
  return parse(KeptObject, text)
}

function parse<T extends z.ZodType>(schema: T, text: string): z.output<T> | undefined {
  try {
    const result = schema.safeParse(JSON.parse(text))
    return result.success ? result.data : undefined
  } catch {
    return undefined
  }
}

/** Writes what the head owns to its state store as it changes. */
export class Journal implements DirectoryJournal {
  readonly #store: StateStore

  constructor(store: StateStore) {
    this.#store = store
  }

  /** A client's call, as submitted (`options` as the client gave them). */
  called(spec: TaskSpec, ttlMs: number | undefined): void {
    const kept: z.input<typeof KeptCall> = {
      id: spec.id,
      fn: spec.fn,
      args: spec.args.map(toWireArg),
      options: spec.options,
      epoch: 1,
    }
    if (ttlMs !== undefined) kept.ttlMs = ttlMs
    this.#store.set('calls', spec.id, JSON.stringify(kept))
  }

  settled(record: DirectoryRecord, value: EncodedValue | undefined): void {
    const kept: KeptObject = {
      fn: record.function,
      status: record.status === 'ready' ? 'ready' : record.status === 'cancelled' ? 'cancelled' : 'failed',
      size: record.size,
      contentType: record.contentType,
      attempts: record.attempts,
      ttlMs: record.ttlMs,
      createdAt: record.createdAt,
    }
    if (record.node !== undefined) kept.node = record.node
    if (record.error) kept.error = record.error
    if (value?.kind === 'json') kept.value = value.text
    this.#store.set('objects', record.id, JSON.stringify(kept))
    // Only a value held on a node may need its call again.
    if (record.status !== 'ready' || record.inline) this.#store.delete('calls', record.id)
  }

  /** Being made again: in flight once more, its call kept. */
  reopened(id: string): void {
    this.#store.delete('objects', id)
  }

  forgotten(id: string): void {
    this.#store.delete('calls', id)
    this.#store.delete('objects', id)
  }

  flushed(): Promise<void> {
    return this.#store.flushed()
  }
}
