/**
 * Actor handles in the SDK: `mp.actor<typeof Counter>('counter').remote(10)`
 * gives a handle at once, whose methods (`c.increment.remote(2)`) give
 * ObjectRefs at once, typed by the class. A handle sends its calls in the
 * order they were made, in batches, one batch after the other, so that the
 * actor runs them in that order. It travels in arguments as `{"$actor": id}`.
 */
import { ObjectRef } from './codec.ts'
import type { AnyFunction, CallOptions, RemoteArgs, RemoteResult } from './types.ts'

// biome-ignore lint/suspicious/noExplicitAny: any class, as TypeScript spells it
export type AnyClass = abstract new (...args: any[]) => any

/** A method of an actor, called remotely. */
export interface RemoteMethod<F extends AnyFunction> {
  remote(...args: RemoteArgs<Parameters<F>>): ObjectRef<RemoteResult<F>>
}

/** The methods of an actor's class, each with `.remote(...)`. */
export type ActorMethods<T> = {
  readonly [K in keyof T as T[K] extends AnyFunction
    ? K extends `_${string}`
      ? never
      : K
    : never]: T[K] extends AnyFunction ? RemoteMethod<T[K]> : never
}

const kActor = Symbol.for('magpie.ActorHandle')

export type ActorHandle<T = unknown> = ActorMethods<T> & {
  /** The actor's id (the one asked for; see `ready` for an actor got by name). */
  readonly id: string
  /** Resolves with the actor's id once it is made (or found, with getIfExists). */
  readonly ready: Promise<string>
  toJSON(): { $actor: string }
}

/** How an actor is made: its call options (maxRestarts, maxConcurrency, numCpus...) and these. */
export interface ActorOptions extends CallOptions {
  /** A name unique among live actors: `mp.getActor(name)` finds it. */
  name?: string
  /** With a name that is held: the existing actor, instead of NAME_TAKEN. */
  getIfExists?: boolean
  /** 'detached': lives until killed, however long it idles. */
  lifetime?: 'detached'
}

/** A deployed actor class, to make actors of. */
export interface ActorClass<C extends AnyClass> {
  readonly name: string
  remote(...args: RemoteArgs<ConstructorParameters<C>>): ActorHandle<InstanceType<C>>
  options(options: ActorOptions): ActorClass<C>
}

export function isActorHandle(value: unknown): value is ActorHandle {
  return typeof value === 'object' && value !== null && (value as { [kActor]?: boolean })[kActor] === true
}

/** What a handle needs: to send one batch of its calls (to its actor, in order), and to know a call is on its way. */
export interface HandleIO {
  sendCalls(
    actorId: string,
    calls: Array<{ id: string; method: string; args: readonly unknown[] }>,
  ): Promise<void>
  track(id: string, accepted: Promise<unknown>): void
  newId(): string
}

/** A handle whose actor is (or will be) `ready`'s id; `id` is the id it was asked under. */
export function actorHandle<T>(id: string, ready: Promise<string>, io: HandleIO): ActorHandle<T> {
  let queue: Array<{ id: string; method: string; args: readonly unknown[]; done: (err?: unknown) => void }> =
    []
  let sending: Promise<void> = ready.then(() => {})
  sending.catch(() => {})
  const flush = (): void => {
    const batch = queue
    queue = []
    sending = sending
      .catch(() => {})
      .then(() => ready)
      .then((actorId) =>
        io.sendCalls(
          actorId,
          batch.map(({ id: callId, method, args }) => ({ id: callId, method, args })),
        ),
      )
      .then(
        () => {
          for (const c of batch) c.done()
        },
        (err: unknown) => {
          for (const c of batch) c.done(err)
        },
      )
  }
  const call = (method: string, args: readonly unknown[]): ObjectRef => {
    const callId = io.newId()
    const accepted = new Promise<void>((resolve, reject) => {
      if (queue.length === 0) queueMicrotask(flush)
      queue.push({ id: callId, method, args, done: (err) => (err === undefined ? resolve() : reject(err)) })
    })
    io.track(callId, accepted)
    return new ObjectRef(callId)
  }
  return handleOf<T>(id, ready, call)
}

/**
 * The shape every actor handle has, in the SDK or inside a function: `id`,
 * `ready`, `{"$actor": id}` as JSON, and each other property a method whose
 * `.remote(...)` is `call(method, args)`.
 */
export function handleOf<T>(
  id: string,
  ready: Promise<string>,
  call: (method: string, args: unknown[]) => ObjectRef,
): ActorHandle<T> {
  let actual = id
  ready.then(
    (found) => {
      actual = found
    },
    () => {},
  )
  const target = { id, ready, toJSON: () => ({ $actor: actual }), [kActor]: true }
  return new Proxy(target, {
    get(t, key, handle) {
      if (key in t || typeof key === 'symbol') return (t as Record<string | symbol, unknown>)[key]
      if (key === 'then') return undefined // not a thenable
      return {
        remote: (...args: unknown[]) => {
          // A method keeps its handle alive (an actor may end when its last handle does).
          void handle
          return call(key, args)
        },
      }
    },
  }) as unknown as ActorHandle<T>
}

/** A decoded value with its `{"$actor": id}` markers turned into handles by `revive`. */
export function withActorHandles(value: unknown, revive: (id: string) => unknown): unknown {
  if (typeof value !== 'object' || value === null || value instanceof ObjectRef) return value
  if (Array.isArray(value)) return value.map((v) => withActorHandles(v, revive))
  const keys = Object.keys(value)
  const id = (value as { $actor?: unknown }).$actor
  if (keys.length === 1 && typeof id === 'string') return revive(id)
  return Object.fromEntries(
    keys.map((k) => [k, withActorHandles((value as Record<string, unknown>)[k], revive)]),
  )
}
