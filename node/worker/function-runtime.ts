/**
 * The in-function API of a worker thread: `remote`, `get`, `put` and `wait`
 * from 'magpie', turned into messages to the node's scheduler.
 */

import {
  type ActorClass,
  type ActorHandle,
  type ActorOptions,
  type AnyClass,
  handleOf,
  withActorHandles,
} from '../../sdk/actors.ts'
import {
  type EncodedValue,
  encodeValue,
  isObjectId,
  newObjectId,
  ObjectRef,
  parseWithRefs,
} from '../../sdk/codec.ts'
import { BadRequestError, deserializeError, FunctionNotFoundError, MagpieError } from '../../sdk/errors.ts'
import type { FunctionRuntime } from '../../sdk/runtime.ts'
import {
  type CallOptions,
  type CancelOptions,
  checkCallOptions,
  type GetOptions,
  type RemoteFunction,
  refuseActorOptions,
  type WaitOptions,
} from '../../sdk/types.ts'
import type { FromWorker, Outcome, TaskArg, ToWorker } from './messages.ts'
import type { RefTracker } from './ref-tracker.ts'
import { asBuffer, toShared } from './shared-bytes.ts'

/** What the runtime needs of its worker thread. */
export interface RuntimeIO {
  /** Queues a message to the scheduler. */
  send(message: FromWorker): void
  /** Sends a request and resolves with the scheduler's reply; the calling task waits meanwhile. */
  request(make: (req: number) => FromWorker): Promise<ToWorker>
  /** The id of the task whose code is running, if any. */
  currentTask(): string | null
  /** The signal of the task whose code is running, aborted if it is cancelled. */
  currentSignal(): AbortSignal | undefined
  /** The variables of the task whose code is running (none outside a task). */
  currentEnv(): Readonly<Record<string, string>>
  /** Whether a function of that name is deployed. */
  knows(name: string): boolean
  /** Starts the ids of objects made here. */
  idPrefix: string
  /** Counts the handles this thread holds. */
  refs: RefTracker
  /** Returns once the node has room for one more call (it waits while the node is full). */
  room(): void
}

/** A value as a function sees it; the refs in it are counted as held by this thread. */
/** Turns `{"$actor": id}` markers into handles (set by the runtime, which makes them). */
let reviveActor: ((id: string) => unknown) | undefined

/** The actor id a node's answer holds, or the error it carries. */
function actorIdOf(reply: ToWorker): string {
  const outcome = reply.type === 'values' ? reply.results[0] : undefined
  if (!outcome) throw new MagpieError('no answer from the node')
  if ('error' in outcome) throw deserializeError(outcome.error)
  return JSON.parse((outcome.value as { text: string }).text) as string
}

export function decodeArg(value: EncodedValue, refs: RefTracker): unknown {
  if (value.kind !== 'json') return asBuffer(value.bytes)
  const decoded = parseWithRefs(value.text, (ref) => refs.decoded(ref))
  return reviveActor && value.text.includes('"$actor"') ? withActorHandles(decoded, reviveActor) : decoded
}

export function encodeArg(arg: unknown): TaskArg {
  if (arg instanceof ObjectRef) return { kind: 'ref', id: arg.id }
  const value = encodeValue(arg)
  return value.kind === 'bytes' ? { kind: 'bytes', bytes: toShared(value.bytes) } : value
}

function decodeOutcome(outcome: Outcome, refs: RefTracker): unknown {
  if ('error' in outcome) throw deserializeError(outcome.error)
  return decodeArg(outcome.value, refs)
}

function refIds(value: unknown, what: string): string[] {
  const list = Array.isArray(value) ? value : [value]
  return list.map((item) => {
    const id = item instanceof ObjectRef ? item.id : (item as { $ref?: unknown } | null)?.$ref
    if (!isObjectId(id)) throw new TypeError(`${what} takes ObjectRefs`)
    return id
  })
}

function timeoutMsOf(timeout: unknown): number | null {
  if (timeout === undefined || timeout === null) return null
  if (typeof timeout !== 'number' || Number.isNaN(timeout) || timeout < 0) {
    throw new TypeError('timeout must be a non-negative number of seconds')
  }
  return timeout * 1000
}

export function createFunctionRuntime(io: RuntimeIO): FunctionRuntime {
  const made = (id: string) => {
    const ref = new ObjectRef(id)
    io.refs.made(ref)
    return ref
  }
  const makeRemote = (name: string, options: CallOptions): RemoteFunction => ({
    name,
    remote: (...args: unknown[]) => {
      if (!io.knows(name)) throw new FunctionNotFoundError(`no function named ${name}`)
      io.room()
      const id = newObjectId(io.idPrefix)
      io.send({ type: 'submit', id, fn: name, args: args.map(encodeArg), options, parent: io.currentTask() })
      return made(id)
    },
    options: (more: CallOptions) =>
      makeRemote(name, refuseActorOptions({ ...options, ...checkCallOptions(more) })),
  })

  /** A handle on an actor, inside a function: its method calls go to the node, in order. */
  const actorHandleOf = (actorId: string, ready: Promise<string> = Promise.resolve(actorId)): ActorHandle =>
    handleOf(actorId, ready, (method, args) => {
      io.room()
      const id = newObjectId(io.idPrefix)
      io.send({
        type: 'submit',
        id,
        fn: '',
        args: args.map(encodeArg),
        options: {},
        parent: io.currentTask(),
        actor: { id: actorId, method },
      })
      return made(id)
    })
  /** A handle decoded or found here: this thread holds its actor, which lives while a handle does. */
  const heldHandle = (id: string): ActorHandle => {
    const handle = actorHandleOf(id)
    io.refs.decoded(handle)
    return handle
  }
  reviveActor = heldHandle

  const makeActor = (cls: string, options: ActorOptions): ActorClass<AnyClass> => ({
    name: cls,
    remote: (...args: unknown[]) => {
      const { name, getIfExists, ...callOptions } = options
      const id = newObjectId(io.idPrefix)
      // Asked before any call of it is sent: the node makes it (or, named with getIfExists, finds it) first.
      const ready = io
        .request((req) => ({
          type: 'actor',
          req,
          id,
          fn: cls,
          args: args.map(encodeArg),
          options: checkCallOptions(callOptions),
          ...(name === undefined ? {} : { name }),
          ...(getIfExists ? { getIfExists } : {}),
        }))
        .then(actorIdOf)
      ready.catch(() => {})
      const handle = actorHandleOf(id, ready)
      // The node counts this thread as holding the new actor already.
      io.refs.made(handle)
      return handle
    },
    options: (more: ActorOptions) => makeActor(cls, { ...options, ...more }),
  })

  return {
    actor: (cls: string, options: ActorOptions = {}) => makeActor(cls, options),
    async getActor(nameOrId: string) {
      const reply = await io.request((req) => ({
        type: 'actor',
        req,
        id: '',
        fn: '',
        args: [],
        options: {},
        name: nameOrId,
        find: true,
      }))
      return heldHandle(actorIdOf(reply))
    },
    remote: (name, options) => makeRemote(name, checkCallOptions(options)),

    async get(refOrRefs: unknown, options: GetOptions = {}) {
      const ids = refIds(refOrRefs, 'get')
      const timeoutMs = timeoutMsOf(options.timeout)
      const reply = await io.request((req) => ({ type: 'get', req, task: io.currentTask(), ids, timeoutMs }))
      if (reply.type !== 'values') throw new MagpieError('unexpected reply to get')
      const values = reply.results.map((outcome) => decodeOutcome(outcome, io.refs))
      return Array.isArray(refOrRefs) ? values : values[0]
    },

    async put(value: unknown) {
      const id = newObjectId(io.idPrefix)
      const encoded = encodeArg(value)
      if (encoded.kind === 'ref') throw new TypeError('put takes a value, not an ObjectRef')
      io.send({ type: 'put', id, value: encoded })
      return made(id)
    },

    cancel(ref: ObjectRef, options: CancelOptions = {}) {
      const [id] = refIds(ref, 'cancel') as [string]
      io.send({ type: 'cancel', id, force: options.force === true, recursive: options.recursive !== false })
    },

    signal() {
      const signal = io.currentSignal()
      if (!signal) throw new MagpieError('signal() works inside a function, while it runs')
      return signal
    },

    env: () => io.currentEnv(),

    async wait(refs: readonly ObjectRef[], options: WaitOptions = {}) {
      if (!Array.isArray(refs)) throw new TypeError('wait takes an array of ObjectRefs')
      const ids = refIds(refs, 'wait')
      if (new Set(ids).size !== ids.length) throw new BadRequestError('wait got the same ref twice')
      const numReturns = options.numReturns ?? Math.min(1, ids.length)
      if (!Number.isInteger(numReturns) || numReturns < 0 || numReturns > ids.length) {
        throw new BadRequestError(`numReturns must be an integer from 0 to ${ids.length}`)
      }
      const timeoutMs = timeoutMsOf(options.timeout)
      const reply = await io.request((req) => ({
        type: 'wait',
        req,
        task: io.currentTask(),
        ids,
        numReturns,
        timeoutMs,
      }))
      if (reply.type !== 'waited') throw new MagpieError('unexpected reply to wait')
      const ready = new Set(reply.ready)
      return {
        ready: refs.filter((r) => ready.has(r.id)),
        pending: refs.filter((r) => !ready.has(r.id)),
      }
    },
  }
}
