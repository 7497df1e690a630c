/**
 * What worker threads ask of their node, batch by batch: nested calls and
 * puts, handles taken and dropped, `get` and `wait` (a task waiting gives its
 * CPU share back meanwhile), and the calls they finished.
 */
import type { EncodedValue } from '../sdk/codec.ts'
import { ActorNotFoundError, serializeError } from '../sdk/errors.ts'
import type { ActorSpec } from './actors.ts'
import type { Dispatcher } from './dispatcher.ts'
import type { MemoryPressure } from './memory-pressure.ts'
import type { NodeCounters } from './node-counters.ts'
import type { RemoteObjects } from './remote-objects.ts'
import type { ObjectStore } from './store/object-store.ts'
import { argumentProblem, lostArgument, type TaskSpec } from './task.ts'
import type { TaskRunner } from './task-runner.ts'
import type { FromWorker, Outcome } from './worker/messages.ts'
import type { WorkerHandle } from './worker/worker-handle.ts'
import type { WorkerPool } from './worker-pool.ts'

export interface WorkerRequestsOptions {
  store: ObjectStore
  counters: NodeCounters
  pressure: MemoryPressure
  remote: RemoteObjects
  tasks: TaskRunner
  pool(): WorkerPool
  dispatcher(): Dispatcher
  /** Submits a call made inside a function on `from`, by the call `parent`. */
  submit(spec: TaskSpec, from: WorkerHandle, parent: string | null): boolean
  /** Cancels a call, as a function asked. */
  cancel(id: string, options: { force: boolean; recursive: boolean }): void
  /** The node's actors, and how a function makes one. */
  actors(): { find(idOrName: string): string | undefined; alias(id: string, to: string): void }
  createActor(spec: ActorSpec, from: WorkerHandle): boolean
  /** An actor's checkpoint, to restore it after a restart. */
  checkpointed(actorId: string, state: EncodedValue): void
  /** Finds a live actor of another node, by name or id (undefined: there are no others). */
  findActorElsewhere?: ((nameOrId: string) => Promise<string | undefined>) | undefined
  /** A call wrote to stdout or stderr. */
  log(message: Extract<FromWorker, { type: 'log' }>): void
}

export class WorkerRequests {
  readonly #o: WorkerRequestsOptions

  constructor(options: WorkerRequestsOptions) {
    this.#o = options
  }

  /** Takes in a batch of messages from a worker, then dispatches what became ready. */
  handle(worker: WorkerHandle, batch: FromWorker[]): void {
    const { counters, tasks } = this.#o
    for (const message of batch) {
      switch (message.type) {
        case 'submit':
          counters.crossing(message.args)
          this.#submit(worker, message)
          break
        case 'put':
          counters.crossing([message.value])
          this.#put(worker, message.id, message.value)
          break
        case 'hold':
          this.#o.pool().hold(worker, message.id)
          break
        case 'release':
          this.#o.pool().release(worker, message.id)
          break
        case 'done':
          if ('value' in message.outcome) counters.crossing([message.outcome.value])
          tasks.done(worker, message.id, message.outcome, message.ms)
          break
        case 'get':
          this.#get(worker, message)
          break
        case 'wait':
          this.#wait(worker, message)
          break
        case 'started':
          tasks.started(worker, message.id)
          break
        case 'log':
          this.#o.log(message)
          break
        case 'pong':
          worker.answered(message.req)
          break
        case 'cancel':
          this.#o.cancel(message.id, message)
          break
        case 'actor':
          this.#actor(worker, message)
          break
        case 'checkpoint':
          this.#o.checkpointed(message.actor, message.state)
          break
      }
    }
    this.#o.dispatcher().soon()
  }

  #submit(worker: WorkerHandle, message: Extract<FromWorker, { type: 'submit' }>): void {
    const { id, fn, args, options, parent, actor } = message
    try {
      const by = parent ?? undefined
      const spec = actor
        ? { id, fn, args, options, actor, parent: by }
        : { id, fn, args, options, parent: by }
      this.#o.submit(spec, worker, parent)
    } catch (err) {
      // The function vanished between the call and now: its result says so.
      this.#o.store.create(id, fn)
      this.#o.pool().hold(worker, id)
      this.#o.store.settle(id, { error: { code: 'FUNCTION_NOT_FOUND', message: (err as Error).message } })
    }
  }

  /** A put from inside a function: its worker holds it; with no room left it fails with OBJECT_STORE_FULL. */
  #put(worker: WorkerHandle, id: string, value: EncodedValue): void {
    if (!this.#o.store.create(id, null)) return
    this.#o.pool().hold(worker, id)
    this.#o.store.settle(id, { value })
    this.#o.pressure.filled()
  }

  /** A function makes an actor on this node (or finds one by name): its id, or why not. */
  #actor(worker: WorkerHandle, message: Extract<FromWorker, { type: 'actor' }>): void {
    let outcome: Outcome
    try {
      const found = message.name === undefined ? undefined : this.#o.actors().find(message.name)
      const elsewhere = this.#o.findActorElsewhere
      if (message.find && found === undefined && elsewhere && message.name !== undefined) {
        // Not here: the head knows every actor of the cluster.
        const name = message.name
        elsewhere(name).then(
          (id) => {
            const answer: Outcome =
              id === undefined
                ? { error: serializeError(new ActorNotFoundError(`no actor named ${name}`)) }
                : { value: { kind: 'json', text: JSON.stringify(id) } }
            worker.send({ type: 'values', req: message.req, results: [answer] })
          },
          (err: unknown) =>
            worker.send({ type: 'values', req: message.req, results: [{ error: serializeError(err) }] }),
        )
        return
      }
      if (message.find) {
        if (found === undefined) throw new ActorNotFoundError(`no actor named ${message.name}`)
        outcome = { value: { kind: 'json', text: JSON.stringify(found) } }
      } else if (found !== undefined && message.getIfExists) {
        this.#o.actors().alias(message.id, found)
        outcome = { value: { kind: 'json', text: JSON.stringify(found) } }
      } else {
        const spec = { id: message.id, fn: message.fn, args: message.args, options: message.options }
        this.#o.createActor(
          { ...spec, ...(message.name === undefined ? {} : { name: message.name }) },
          worker,
        )
        outcome = { value: { kind: 'json', text: JSON.stringify(message.id) } }
      }
    } catch (err) {
      outcome = { error: serializeError(err) }
    }
    worker.send({ type: 'values', req: message.req, results: [outcome] })
  }

  #get(worker: WorkerHandle, message: Extract<FromWorker, { type: 'get' }>): void {
    const { store, counters } = this.#o
    const unique = [...new Set(message.ids)]
    this.#o.remote.fetchMissing(unique)
    const reply = (settled: string[]) => {
      const done = new Set(settled)
      const results = message.ids.map((id): Outcome => {
        if (!done.has(id))
          return { error: { code: 'GET_TIMEOUT', message: `object ${id} not ready in time` } }
        const entry = store.lookup(id)
        const value = entry?.status === 'ready' ? store.value(id) : undefined
        return value ? { value } : { error: argumentProblem(id, entry) ?? lostArgument(id) }
      })
      for (const r of results) if ('value' in r) counters.crossing([r.value])
      worker.send({ type: 'values', req: message.req, results })
    }
    this.#whenSettled(worker, message.task, unique, unique.length, message.timeoutMs, reply)
  }

  #wait(worker: WorkerHandle, message: Extract<FromWorker, { type: 'wait' }>): void {
    this.#o.remote.fetchMissing(message.ids)
    this.#whenSettled(worker, message.task, message.ids, message.numReturns, message.timeoutMs, (ready) =>
      worker.send({ type: 'waited', req: message.req, ready }),
    )
  }

  /** Calls `then` when `count` of `ids` settle; the task's CPU share is free while it waits. */
  #whenSettled(
    worker: WorkerHandle,
    taskId: string | null,
    ids: string[],
    count: number,
    timeoutMs: number | null,
    then: (settled: string[]) => void,
  ): void {
    const { store } = this.#o
    const limit = timeoutMs ?? Number.POSITIVE_INFINITY
    store.waitAny(ids, count, 0).then((now) => {
      if (now.length >= count || limit <= 0) {
        then(now)
        return
      }
      if (taskId) worker.block(taskId)
      this.#o.dispatcher().soon()
      store.waitAny(ids, count, limit).then((settled) => {
        if (taskId) worker.unblock(taskId)
        then(settled)
      })
    })
  }
}
