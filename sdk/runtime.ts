/**
 * The in-function API: `remote`, `get`, `put` and `wait` imported from 'magpie'
 * inside a function are bound to the node the function runs on. The node's
 * worker installs its runtime under a global symbol; outside a node these
 * functions say so instead of guessing a gateway.
 */

import type { ActorClass, ActorHandle, ActorOptions, AnyClass } from './actors.ts'
import type { ObjectRef } from './codec.ts'
import { MagpieError } from './errors.ts'
import type {
  AnyFunction,
  CallOptions,
  CancelOptions,
  GetOptions,
  RemoteFunction,
  WaitOptions,
  WaitResult,
} from './types.ts'

/** What a node's worker provides to the functions it runs. */
export interface FunctionRuntime {
  remote(name: string, options?: CallOptions): RemoteFunction
  get(refOrRefs: unknown, options?: GetOptions): Promise<unknown>
  put(value: unknown): Promise<ObjectRef>
  wait(refs: readonly ObjectRef[], options?: WaitOptions): Promise<WaitResult>
  cancel(ref: ObjectRef, options?: CancelOptions): void
  signal(): AbortSignal
  /** The variables of the call running now: its function's `config.env` and granted secrets. */
  env(): Readonly<Record<string, string>>
  actor(cls: string, options?: ActorOptions): ActorClass<AnyClass>
  getActor(nameOrId: string): Promise<ActorHandle>
}

export const RUNTIME_KEY = Symbol.for('magpie.runtime')

function runtime(): FunctionRuntime {
  const rt = (globalThis as { [RUNTIME_KEY]?: FunctionRuntime })[RUNTIME_KEY]
  if (!rt) {
    throw new MagpieError(
      'remote, get, put and wait from magpie work inside a function run by a magpie node; use connect() elsewhere',
    )
  }
  return rt
}

/**
 * A handle on another function, for nested calls from inside a function.
 * @example
 * const child = remote<(n: number) => number>('fib').remote(n - 1)
 */
export function remote<F extends AnyFunction = AnyFunction>(
  name: string,
  options?: CallOptions,
): RemoteFunction<F> {
  return runtime().remote(name, options) as RemoteFunction<F>
}

/** Inside a function: the value of a ref (or list of refs); the CPU slot is free while it waits. */
export function get<T>(ref: ObjectRef<T>, options?: GetOptions): Promise<T>
export function get<T>(refs: readonly ObjectRef<T>[], options?: GetOptions): Promise<T[]>
export function get(refOrRefs: unknown, options?: GetOptions): Promise<unknown> {
  return runtime().get(refOrRefs, options)
}

/** Inside a function: stores a value in this node's object store. */
export function put<T>(value: T): Promise<ObjectRef<T>> {
  return runtime().put(value) as Promise<ObjectRef<T>>
}

/** Inside a function: waits until `numReturns` of `refs` are ready. */
export function wait<T>(refs: readonly ObjectRef<T>[], options?: WaitOptions): Promise<WaitResult<T>> {
  return runtime().wait(refs, options) as Promise<WaitResult<T>>
}

/**
 * Inside a function: cancels a call (and, unless `recursive: false`, the
 * calls it made). A queued call never runs; a running one settles as
 * cancelled at once, and its signal aborts.
 */
export function cancel(ref: ObjectRef, options?: CancelOptions): void {
  runtime().cancel(ref, options)
}

/**
 * Inside a function: the AbortSignal of the call that runs, aborted if it is
 * cancelled; pass it to fetch, or watch it in long work.
 * @example
 * const page = await fetch(url, { signal: signal() })
 */
export function signal(): AbortSignal {
  return runtime().signal()
}

/**
 * Inside a function: the variables of the call that reads them, its
 * function's `config.env` and the secrets its `config.secrets` grants;
 * nothing of another function's, even on the same thread. Read-only.
 * @example
 * const res = await fetch(env.API_URL, { headers: { authorization: env.API_KEY } })
 */
export const env: Readonly<Record<string, string | undefined>> = new Proxy(
  {},
  {
    get: (_target, key) => (typeof key === 'string' ? runtime().env()[key] : undefined),
    has: (_target, key) => typeof key === 'string' && Object.hasOwn(runtime().env(), key),
    ownKeys: () => Object.keys(runtime().env()),
    getOwnPropertyDescriptor: (_target, key) => {
      const vars = runtime().env()
      return typeof key === 'string' && Object.hasOwn(vars, key)
        ? { value: vars[key], enumerable: true, configurable: true, writable: false }
        : undefined
    },
    set: () => {
      throw new TypeError('env is read-only: set variables in config.env, secrets with magpie secret set')
    },
    defineProperty: () => false,
    deleteProperty: () => false,
  },
)

/**
 * Inside a function: a deployed actor class, to make actors of on this
 * node (`.remote(...args)` gives the handle at once).
 * @example
 * const c = actor<typeof Counter>('counter').remote(0); await get(c.increment.remote())
 */
export function actor<C extends AnyClass>(cls: string, options?: ActorOptions): ActorClass<C> {
  return runtime().actor(cls, options) as ActorClass<C>
}

/** Inside a function: the handle of a live actor, by name or id. */
export function getActor<T = unknown>(nameOrId: string): Promise<ActorHandle<T>> {
  return runtime().getActor(nameOrId) as Promise<ActorHandle<T>>
}
