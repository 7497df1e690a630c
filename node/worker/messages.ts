/**
 * Messages between a node's scheduler (main thread) and its worker threads.
 * Both directions send batches: an array of messages per postMessage.
 */
import type { EncodedValue } from '../../sdk/codec.ts'
import type { SerializedError } from '../../sdk/errors.ts'
import type { CallOptions } from '../../sdk/types.ts'

/**
 * An argument as submitted: a value, or a top-level reference to resolve
 * first (`at`: the address of the node that holds it, if it is elsewhere).
 */
export type TaskArg = EncodedValue | { kind: 'ref'; id: string; at?: string }

/** A task handed to a worker: its arguments already resolved to values. */
export interface RunTask {
  id: string
  fn: string
  url: string
  args: EncodedValue[]
  /** Share of the worker's CPU slot the task takes while it runs (1 / concurrency). */
  weight: number
  /** Set when the call has a time limit: the worker then reports when it starts it. */
  timed?: true
  /** The call's variables (its function's config.env and granted secrets), if it has any. */
  env?: Readonly<Record<string, string>>
  /** A call of an actor: its constructor (method null), or a method of the instance this thread holds. */
  actor?: {
    id: string
    method: string | null
    concurrency?: number
    /** Checkpoint after every N calls, or T seconds (the class has checkpoint and restore). */
    checkpointEvery?: number | { calls?: number; seconds?: number }
    /** With a constructor: the state to restore once made (its last checkpoint). */
    restore?: EncodedValue
  }
}

export type Outcome = { value: EncodedValue } | { error: SerializedError }

export type ToWorker =
  | { type: 'run'; task: RunTask }
  | { type: 'values'; req: number; results: Outcome[] }
  | { type: 'waited'; req: number; ready: string[] }
  | { type: 'functions'; names: string[]; urls: string[] }
  /** The call ran out of time: forget it, and free its share of the thread. */
  | { type: 'abandon'; id: string }
  /** The call was cancelled: abort its signal (its result, if it comes, is discarded). */
  | { type: 'cancel'; id: string }
  | { type: 'ping'; req: number }
  /** An actor is dead: its instance is let go. */
  | { type: 'drop-actor'; id: string }
  /** The store fills up or lets go of much shared memory: collect garbage, so that dead handles and views are let go. */
  | { type: 'collect' }

export type FromWorker =
  | {
      type: 'submit'
      id: string
      fn: string
      args: TaskArg[]
      options: CallOptions
      parent: string | null
      /** A method call of an actor (fn is then found from the actor). */
      actor?: { id: string; method: string }
    }
  /** A function makes an actor, or finds one by name (`find`); the reply (`values`) holds its id, or why not. */
  | {
      type: 'actor'
      req: number
      id: string
      fn: string
      args: TaskArg[]
      options: CallOptions
      name?: string
      getIfExists?: boolean
      find?: boolean
    }
  | { type: 'put'; id: string; value: EncodedValue }
  /** `ms`: how long the call took here, from start to result. */
  | { type: 'done'; id: string; outcome: Outcome; ms: number }
  | { type: 'started'; id: string }
  /** A call wrote to stdout or stderr (`t`: ms since the epoch). */
  | { type: 'log'; id: string; fn: string; stream: 'stdout' | 'stderr'; text: string; t: number }
  /** An actor's state, from its checkpoint(): kept by the node to restore it after a restart. */
  | { type: 'checkpoint'; actor: string; state: EncodedValue }
  /** A function cancels a call (`cancel` from 'magpie'). */
  | { type: 'cancel'; id: string; force: boolean; recursive: boolean }
  | { type: 'pong'; req: number }
  /** This thread holds a handle to the object (it decoded one), or no longer does. */
  | { type: 'hold'; id: string }
  | { type: 'release'; id: string }
  | { type: 'get'; req: number; task: string | null; ids: string[]; timeoutMs: number | null }
  | {
      type: 'wait'
      req: number
      task: string | null
      ids: string[]
      numReturns: number
      timeoutMs: number | null
    }

export interface WorkerData {
  index: number
  /** Starts the ids of objects made here, so that they name their owner (empty for a lone node). */
  idPrefix: string
  /** Bytes one call may write to stdout and stderr; the rest is dropped, with a marker. */
  maxCallOutput: number
  /** Whether the node is full, shared with it: a nested call waits while it is (room.ts). */
  room: Int32Array
  /** The node's worker threads. */
  threads: number
  names: string[]
  /** Bundles to import ahead of their first call. */
  urls: string[]
}
