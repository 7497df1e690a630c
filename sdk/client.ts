/**
 * The magpie client: calls functions over HTTP and reads their results.
 * Calls are pipelined: `.remote()` picks the result's id here and returns at
 * once, while the request travels; `get` waits for that request first.
 */

import {
  type ActorClass,
  type ActorHandle,
  type ActorOptions,
  type AnyClass,
  actorHandle,
  type HandleIO,
  withActorHandles,
} from './actors.ts'
import { CallBatcher } from './call-batcher.ts'
import {
  BYTES_TYPE,
  checkRef,
  decodeValue,
  ID_HEADER,
  newObjectId,
  ObjectRef,
  parseWithRefs,
} from './codec.ts'
import { BadRequestError, deserializeError, GetTimeoutError, type MagpieError } from './errors.ts'
import { streamObjects } from './object-stream.ts'
import { ProgressBar } from './progress.ts'
import { type Body, lines, Transport, type TransportOptions } from './transport.ts'
import {
  type AnyFunction,
  type CallOptions,
  type CancelOptions,
  type GetOptions,
  type RemoteArgs,
  type RemoteFunction,
  refuseActorOptions,
  type WaitOptions,
  type WaitResult,
} from './types.ts'

/** Options of {@link connect}. */
export interface ConnectOptions extends TransportOptions {}

/** Longest single long-poll the gateway accepts, in seconds. */
const MAX_POLL_S = 60

type Refs = readonly ObjectRef[]

/**
 * A connection to a magpie gateway.
 * @example
 * const mp = connect('http://127.0.0.1:8080')
 * console.log(await mp.get(mp.remote('square').remote(42)))  // 1764
 */
export class Client {
  readonly #transport: Transport
  /** Long polls get connections of their own, so that they never hold up calls. */
  readonly #polls: Transport
  readonly #calls: CallBatcher
  /** Calls still travelling, by result id: `get` and `wait` wait for them first. */
  readonly #submissions = new Map<string, Promise<void>>()

  constructor(url: string, options: ConnectOptions = {}) {
    this.#transport = new Transport(url, options)
    this.#polls = new Transport(url, { ...options, connections: 32 })
    this.#calls = new CallBatcher(this.#transport)
  }

  get url(): string {
    return this.#transport.baseUrl
  }

  /**
   * A deployed actor class: `.remote(...args)` makes an actor and gives its
   * handle at once; `.options({ name, getIfExists, maxRestarts, ... })` first.
   * @example
   * const c = mp.actor<typeof Counter>('counter').remote(10)
   * await mp.get(c.increment.remote(2)) // 12
   */
  actor<C extends AnyClass>(cls: string, options: ActorOptions = {}): ActorClass<C> {
    if (typeof cls !== 'string' || cls === '') throw new TypeError('the class must be a non-empty string')
    return {
      name: cls,
      remote: (...args: RemoteArgs<ConstructorParameters<C>>) =>
        this.#makeActor<InstanceType<C>>(cls, args, options),
      options: (more: ActorOptions) => this.actor<C>(cls, { ...options, ...more }),
    }
  }

  /** The handle of a live actor, by name or id (ActorNotFoundError if there is none). */
  async getActor<T = unknown>(nameOrId: string): Promise<ActorHandle<T>> {
    const info = await this.#transport.json<{ id: string }>(
      'GET',
      `/v1/actors/${encodeURIComponent(nameOrId)}`,
    )
    return actorHandle<T>(info.id, Promise.resolve(info.id), this.#handleIO)
  }

  /**
   * What a call wrote to stdout and stderr, line by line: `follow` goes on
   * with the lines to come until it settles; `children` adds the lines of
   * the calls it made, each prefixed `[id]`; `timestamps` prefixes each line
   * with the time it was written. LogsGoneError if they are past retention.
   */
  async *logs(
    ref: ObjectRef,
    options: { follow?: boolean; children?: boolean; timestamps?: boolean } = {},
  ): AsyncGenerator<string> {
    const id = checkRef(ref).id
    await this.#submitted([ref])
    const query = ['follow', 'children', 'timestamps']
      .filter((k) => options[k as keyof typeof options] === true)
      .map((k) => `&${k}=1`)
      .join('')
    const transport = options.follow ? this.#polls : this.#transport
    const reply = await transport.send('GET', `/v1/objects/${id}/logs?${query.slice(1)}`)
    yield* lines(reply.chunks())
  }

  /** Kills an actor: its queued calls fail with ACTOR_DIED, its name is free again. */
  async kill(handle: ActorHandle): Promise<void> {
    const id = await handle.ready
    ;(await this.#transport.send('DELETE', `/v1/actors/${encodeURIComponent(id)}`)).discard()
  }

  readonly #handleIO: HandleIO = {
    newId: () => newObjectId(),
    track: (id, accepted) => this.#track(id, accepted),
    sendCalls: async (actorId, calls) => {
      await this.#transport.json(
        'POST',
        '/v1/calls',
        calls.map((c) => ({ actor: actorId, method: c.method, args: c.args, id: c.id })),
      )
    },
  }

  #makeActor<T>(cls: string, args: readonly unknown[], options: ActorOptions): ActorHandle<T> {
    const id = newObjectId()
    const { name, getIfExists, lifetime, ...callOptions } = options
    const body = {
      class: cls,
      args,
      ...(name === undefined ? {} : { name }),
      options: { ...callOptions, ...(getIfExists ? { getIfExists } : {}), ...(lifetime ? { lifetime } : {}) },
    }
    const made = this.#transport
      .send('POST', '/v1/actors', JSON.stringify(body), {
        'content-type': 'application/json',
        [ID_HEADER]: id,
      })
      .then(async (reply) => (JSON.parse(await reply.text()) as { id: string }).id)
    this.#track(id, made)
    made.catch(() => {})
    return actorHandle<T>(id, made, this.#handleIO)
  }

  /** A handle on the deployed function `name`. */
  remote<F extends AnyFunction = AnyFunction>(name: string, options: CallOptions = {}): RemoteFunction<F> {
    if (typeof name !== 'string' || name === '') throw new TypeError('name must be a non-empty string')
    refuseActorOptions(options)
    return {
      name,
      remote: (...args: RemoteArgs<Parameters<F>>) => this.#invoke(name, args, options),
      options: (more: CallOptions) => this.remote<F>(name, refuseActorOptions({ ...options, ...more })),
    }
  }

  #invoke<T>(name: string, args: readonly unknown[], options: CallOptions): ObjectRef<T> {
    const id = newObjectId()
    let accepted: Promise<unknown>
    if (args.length === 1 && args[0] instanceof Uint8Array && Object.keys(options).length === 0) {
      // One bytes argument travels as the raw body.
      accepted = this.#transport
        .send('POST', `/v1/functions/${encodeURIComponent(name)}/invoke`, args[0], {
          'content-type': BYTES_TYPE,
          [ID_HEADER]: id,
        })
        .then((reply) => reply.discard())
    } else if (args.some((a) => a instanceof Uint8Array)) {
      // Other bytes arguments are stored first and passed by ref.
      accepted = Promise.all(args.map((a) => (a instanceof Uint8Array ? this.put(a) : a))).then((stored) =>
        this.#calls.add({ id, fn: name, args: stored, options }),
      )
    } else {
      accepted = this.#calls.add({ id, fn: name, args, options })
    }
    this.#track(id, accepted)
    return new ObjectRef<T>(id)
  }

  #track(id: string, accepted: Promise<unknown>): void {
    const done = accepted.then(() => {
      this.#submissions.delete(id)
    })
    // Kept (and so reported by get/wait) until the caller looks at the ref.
    done.catch(() => {})
    this.#submissions.set(id, done)
  }

  async #submitted(refs: Refs): Promise<void> {
    for (const ref of refs) {
      const pending = this.#submissions.get(ref.id)
      if (pending) await pending
    }
  }

  /** The value of a ref, or of a list of refs in input order. */
  get<T>(ref: ObjectRef<T>, options?: GetOptions): Promise<T>
  get<T extends readonly ObjectRef[]>(
    refs: T,
    options?: GetOptions,
  ): Promise<{ [K in keyof T]: T[K] extends ObjectRef<infer V> ? V : unknown }>
  async get(refOrRefs: ObjectRef | Refs, options: GetOptions = {}): Promise<unknown> {
    const timeout = checkTimeout(options.timeout)
    const deadline = timeout === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeout * 1000
    if (!Array.isArray(refOrRefs)) {
      const ref = checkRef(refOrRefs as ObjectRef)
      await this.#submitted([ref])
      return this.#getOne(ref.id, deadline)
    }
    const refs = (refOrRefs as Refs).map(checkRef)
    await this.#submitted(refs)
    const unique = [...new Set(refs.map((r) => r.id))]
    const values = new Map<string, unknown>()
    const bar = options.progress ? new ProgressBar(unique.length, { label: 'objects' }) : undefined
    try {
      for await (const [id, value] of this.#settled(unique, deadline)) {
        values.set(id, value)
        bar?.update(values.size)
      }
    } finally {
      bar?.done()
    }
    return refs.map((r) => values.get(r.id))
  }

  /**
   * Yields each `[id, value]` of `ids` as it settles, from one streaming
   * request (renewed every minute at most); throws the first failure, or
   * GetTimeoutError at the deadline.
   */
  async *#settled(
    ids: readonly string[],
    deadline: number,
    failures: 'throw' | 'yield' = 'throw',
  ): AsyncGenerator<[string, unknown, MagpieError?]> {
    const pending = new Set(ids)
    while (pending.size > 0) {
      const left = (deadline - Date.now()) / 1000
      if (left <= 0) throw new GetTimeoutError(`${pending.size} of ${ids.length} objects not ready in time`)
      for await (const line of streamObjects(this.#polls, [...pending], Math.min(left, MAX_POLL_S), (text) =>
        this.#withActors(text, parseWithRefs(text)),
      )) {
        if (line.status !== 'ready') {
          const error = deserializeError(line.error)
          if (failures === 'throw') throw error
          pending.delete(line.id)
          yield [line.id, undefined, error]
          continue
        }
        // A value read on its own may be unfinished again by now (being made again after its node died).
        let value: unknown
        try {
          value = line.contentType === undefined ? line.value : await this.#getOne(line.id, deadline)
        } catch (err) {
          if (failures === 'throw' || err instanceof GetTimeoutError) throw err
          pending.delete(line.id)
          yield [line.id, undefined, err as MagpieError]
          continue
        }
        pending.delete(line.id)
        yield [line.id, value]
      }
    }
  }

  async #getOne(id: string, deadline: number): Promise<unknown> {
    for (;;) {
      const left = (deadline - Date.now()) / 1000
      const result = await this.#read(id, Math.max(0, Math.min(left, MAX_POLL_S)))
      if (result !== PENDING) return result
      if (Date.now() >= deadline) throw new GetTimeoutError(`object ${id} not ready in time`)
    }
  }

  /** Reads one object, long-polling up to `waitS`; PENDING if it is not ready by then. */
  async #read(id: string, waitS: number): Promise<unknown> {
    const transport = waitS > 0 ? this.#polls : this.#transport
    const response = await transport.send('GET', `/v1/objects/${id}?wait=${roundS(waitS)}`)
    if (response.status === 202) {
      await response.discard()
      return PENDING
    }
    if ((response.header('content-type') ?? '').startsWith(BYTES_TYPE)) return response.bytes()
    const text = await response.text()
    return this.#withActors(text, decodeValue({ kind: 'json', text }))
  }

  /** A value read, with the actor handles in it (`{"$actor": id}` in its JSON `text`) usable. */
  #withActors(text: string, value: unknown): unknown {
    if (!text.includes('"$actor"')) return value
    return withActorHandles(value, (id) => actorHandle(id, Promise.resolve(id), this.#handleIO))
  }

  /** Waits until `numReturns` of `refs` are ready; both lists keep input order. */
  async wait<T>(refs: readonly ObjectRef<T>[], options: WaitOptions = {}): Promise<WaitResult<T>> {
    if (!Array.isArray(refs)) throw new TypeError('refs must be an array of ObjectRefs')
    const checked = refs.map((r: ObjectRef<T>) => checkRef(r))
    const ids = checked.map((r) => r.id)
    if (new Set(ids).size !== ids.length) throw new BadRequestError('wait got the same ref twice')
    const numReturns = options.numReturns ?? Math.min(1, ids.length)
    if (!Number.isInteger(numReturns) || numReturns < 0 || numReturns > ids.length) {
      throw new BadRequestError(`numReturns must be an integer from 0 to ${ids.length}`)
    }
    const timeout = checkTimeout(options.timeout)
    await this.#submitted(checked)
    const deadline = timeout === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeout * 1000
    for (;;) {
      const left = Math.max(0, (deadline - Date.now()) / 1000)
      const { ready } = await this.#polls.json<{ ready: string[] }>('POST', '/v1/wait', {
        ids,
        numReturns,
        timeout: roundS(Math.min(left, MAX_POLL_S)),
      })
      if (ready.length >= numReturns || Date.now() >= deadline) {
        const got = new Set(ready)
        return {
          ready: checked.filter((r) => got.has(r.id)),
          pending: checked.filter((r) => !got.has(r.id)),
        }
      }
    }
  }

  /**
   * Yields `[ref, value]` pairs as refs become ready, in the order they finish,
   * from one streaming request; the first failure is thrown.
   */
  async *asCompleted<T>(refs: readonly ObjectRef<T>[], options: { timeout?: number } = {}) {
    const timeout = checkTimeout(options.timeout)
    const deadline = timeout === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeout * 1000
    const byId = new Map(refs.map((r) => [checkRef(r).id, r]))
    await this.#submitted([...byId.values()])
    for await (const [id, value] of this.#settled([...byId.keys()], deadline)) {
      yield [byId.get(id) as ObjectRef<T>, value as T] as [ObjectRef<T>, T]
    }
  }

  /**
   * Yields each ref as it settles, in the order they finish, with its value
   * or its error: a failure does not end the others (a batch over many
   * inputs, where one bad input is reported at the end). One streaming
   * request, as asCompleted.
   * @example
   * for await (const r of mp.settled(refs)) if (!r.ok) console.error(r.ref.id, r.error.message)
   */
  async *settled<T>(
    refs: readonly ObjectRef<T>[],
    options: { timeout?: number } = {},
  ): AsyncGenerator<Settled<T>> {
    const timeout = checkTimeout(options.timeout)
    const deadline = timeout === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeout * 1000
    const byId = new Map(refs.map((r) => [checkRef(r).id, r]))
    await this.#submitted([...byId.values()])
    for await (const [id, value, error] of this.#settled([...byId.keys()], deadline, 'yield')) {
      const ref = byId.get(id) as ObjectRef<T>
      yield error ? { ref, ok: false, error } : { ref, ok: true, value: value as T }
    }
  }

  /** Stores a value (JSON or bytes) and returns a ref to it. */
  async put<T>(value: T, options: { ttlS?: number } = {}): Promise<ObjectRef<T>> {
    const bytes = value instanceof Uint8Array
    const body: Body = bytes ? (value as Uint8Array) : JSON.stringify(value === undefined ? null : value)
    const query = options.ttlS === undefined ? '' : `?ttlS=${options.ttlS}`
    const response = await this.#transport.send('POST', `/v1/objects${query}`, body, {
      'content-type': bytes ? BYTES_TYPE : 'application/json',
    })
    const { id } = JSON.parse(await response.text()) as { id: string }
    return new ObjectRef<T>(id)
  }

  /** Frees objects early; their ids answer OBJECT_NOT_FOUND afterwards. */
  async free(refs: ObjectRef | Refs): Promise<void> {
    const list = Array.isArray(refs) ? (refs as Refs) : [refs as ObjectRef]
    await this.#submitted(list.map(checkRef))
    await Promise.all(
      list.map(async (r) => (await this.#transport.send('DELETE', `/v1/objects/${r.id}`)).discard()),
    )
  }

  /**
   * Cancels calls: a queued one never runs; a running one settles as
   * cancelled (TaskCancelledError) at once, and its signal aborts; with
   * `force` its worker is replaced at once. `recursive` (default true)
   * cancels the calls it made. A finished call is left as it is.
   * @example
   * await mp.cancel(ref, { force: true })
   */
  async cancel(refs: ObjectRef | Refs, options: CancelOptions = {}): Promise<void> {
    const list = Array.isArray(refs) ? (refs as Refs) : [refs as ObjectRef]
    await this.#submitted(list.map(checkRef))
    const body = JSON.stringify({ force: options.force === true, recursive: options.recursive !== false })
    await Promise.all(
      list.map(async (r) =>
        (
          await this.#transport.send('POST', `/v1/objects/${r.id}/cancel`, body, {
            'content-type': 'application/json',
          })
        ).discard(),
      ),
    )
  }

  /** Status, size and placement of an object. */
  meta(ref: ObjectRef): Promise<Record<string, unknown>> {
    return this.#transport.json('GET', `/v1/objects/${checkRef(ref).id}/meta`)
  }

  /** Closes the connections kept to the gateway. */
  async close(): Promise<void> {
    await Promise.all([this.#transport.close(), this.#polls.close()])
  }
}

/** A ref settled: its value, or its error. */
export type Settled<T> =
  | { ref: ObjectRef<T>; ok: true; value: T }
  | { ref: ObjectRef<T>; ok: false; error: MagpieError }

const PENDING = Symbol('pending')

function roundS(seconds: number): string {
  return String(Math.round(seconds * 1000) / 1000)
}

function checkTimeout(timeout: unknown): number | undefined {
  if (timeout === undefined || timeout === null) return undefined
  if (typeof timeout !== 'number' || Number.isNaN(timeout) || timeout < 0) {
    throw new TypeError('timeout must be a non-negative number of seconds')
  }
  return timeout
}

export type { MagpieError }
