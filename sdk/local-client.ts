/**
 * The client of local mode: `connect('local:', { functions })`, or
 * `connect()` with `MAGPIE_LOCAL=1`. The same methods as a connection to a
 * gateway, answered by a {@link LocalEngine} in this process.
 */
import type { ActorClass, ActorHandle, ActorOptions, AnyClass } from './actors.ts'
import { Client, type Settled } from './client.ts'
import { checkRef, type ObjectRef } from './codec.ts'
import { LocalEngine, type LocalOptions } from './local.ts'
import { ProgressBar } from './progress.ts'
import {
  type AnyFunction,
  type CallOptions,
  type GetOptions,
  type RemoteArgs,
  type RemoteFunction,
  refuseActorOptions,
  type WaitOptions,
  type WaitResult,
} from './types.ts'

type Refs = readonly ObjectRef[]

export class LocalClient extends Client {
  readonly engine: LocalEngine

  constructor(options: LocalOptions = {}) {
    // The HTTP half is never used: every method is answered here.
    super('http://local.invalid')
    this.engine = new LocalEngine(options)
  }

  override get url(): string {
    return 'local:'
  }

  override remote<F extends AnyFunction = AnyFunction>(
    name: string,
    options: CallOptions = {},
  ): RemoteFunction<F> {
    if (typeof name !== 'string' || name === '') throw new TypeError('name must be a non-empty string')
    refuseActorOptions(options)
    return {
      name,
      remote: (...args: RemoteArgs<Parameters<F>>) => this.engine.submit(name, args, options) as never,
      options: (more: CallOptions) => this.remote<F>(name, refuseActorOptions({ ...options, ...more })),
    }
  }

  /** Calls `name` and waits for its value: `await mp.call('square', 4)`. */
  async call<F extends AnyFunction = AnyFunction>(name: string, ...args: RemoteArgs<Parameters<F>>) {
    return this.get(this.remote<F>(name).remote(...args))
  }

  override actor<C extends AnyClass>(cls: string, options: ActorOptions = {}): ActorClass<C> {
    if (typeof cls !== 'string' || cls === '') throw new TypeError('the class must be a non-empty string')
    return {
      name: cls,
      remote: (...args: RemoteArgs<ConstructorParameters<C>>) => {
        const { id, ready } = this.engine.makeActor(cls, args, options)
        return this.engine.handle<InstanceType<C>>(id, ready)
      },
      options: (more: ActorOptions) => this.actor<C>(cls, { ...options, ...more }),
    }
  }

  override async getActor<T = unknown>(nameOrId: string): Promise<ActorHandle<T>> {
    return this.engine.handle<T>(this.engine.findActor(nameOrId))
  }

  override async kill(handle: ActorHandle): Promise<void> {
    this.engine.kill(await handle.ready)
  }

  override async *logs(ref: ObjectRef, options: { follow?: boolean } = {}): AsyncGenerator<string> {
    yield* this.engine.logs(checkRef(ref).id, options.follow === true)
  }

  // biome-ignore lint/suspicious/noExplicitAny: the overloads of Client.get are kept
  override async get(refOrRefs: any, options: GetOptions = {}): Promise<any> {
    const refs: Refs = Array.isArray(refOrRefs) ? refOrRefs : [refOrRefs]
    refs.forEach(checkRef)
    if (!options.progress || !Array.isArray(refOrRefs)) return this.engine.get(refOrRefs, options.timeout)
    const bar = new ProgressBar(refs.length, { label: 'objects' })
    let done = 0
    try {
      for await (const _ of this.engine.asCompleted([...new Set(refs.map((r) => r.id))], options.timeout)) {
        bar.update(++done)
      }
    } finally {
      bar.done()
    }
    return this.engine.get(refOrRefs, options.timeout)
  }

  override wait<T>(refs: readonly ObjectRef<T>[], options: WaitOptions = {}): Promise<WaitResult<T>> {
    return this.engine.wait(refs, options)
  }

  override async *asCompleted<T>(refs: readonly ObjectRef<T>[], options: { timeout?: number } = {}) {
    const byId = new Map(refs.map((r) => [checkRef(r).id, r]))
    for await (const [id, value] of this.engine.asCompleted([...byId.keys()], options.timeout)) {
      yield [byId.get(id) as ObjectRef<T>, value as T] as [ObjectRef<T>, T]
    }
  }

  override async *settled<T>(refs: readonly ObjectRef<T>[], options: { timeout?: number } = {}) {
    const byId = new Map(refs.map((r) => [checkRef(r).id, r]))
    for await (const [id, value, error] of this.engine.asCompleted(
      [...byId.keys()],
      options.timeout,
      'yield',
    )) {
      const ref = byId.get(id) as ObjectRef<T>
      yield (error ? { ref, ok: false, error } : { ref, ok: true, value: value as T }) as Settled<T>
    }
  }

  override async put<T>(value: T): Promise<ObjectRef<T>> {
    return this.engine.put(value) as ObjectRef<T>
  }

  override async free(refs: ObjectRef | Refs): Promise<void> {
    for (const r of Array.isArray(refs) ? refs : [refs]) this.engine.free(checkRef(r).id)
  }

  override async cancel(refs: ObjectRef | Refs): Promise<void> {
    for (const r of Array.isArray(refs) ? refs : [refs]) await this.engine.cancel(checkRef(r).id)
  }

  override async meta(ref: ObjectRef): Promise<Record<string, unknown>> {
    return this.engine.meta(checkRef(ref).id)
  }

  /** Ends the actors and forgets the objects: the next test starts clean. */
  reset(): void {
    this.engine.reset()
  }

  override async close(): Promise<void> {
    this.engine.reset()
  }
}
