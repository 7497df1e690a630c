/**
 * A node's actors: instances of a class, each living in one of the node's
 * actor threads (beside its task workers: a thread of its own while there
 * are fewer than `actorThreads`, then the thread with the fewest actors;
 * see WorkerPool.actorHost), whose method calls run there in the order they
 * were submitted, one at a time, or up to `maxConcurrency` at once for a
 * class that sets it. Calls go to the actor's thread ahead of their turn (up
 * to PIPELINE), and the thread keeps each actor to its order and
 * concurrency. As in Ray, an actor holds no CPU slot, idle or running: tasks
 * never wait for actors, nor actors for tasks. A busy actor's queue holds
 * back no other actor; a long synchronous method holds its thread, and so
 * only the actors that share it (none, below `actorThreads` actors).
 *
 * A call is a task (node/task.ts) with `actor` set; the constructor is call
 * 0, whose object settles when the actor is up (or fails with the
 * constructor's error: the actor is then dead). When its thread dies the
 * actor is made again from its constructor arguments (`maxRestarts`, from a
 * checkpoint if its class keeps one), and its calls in flight run again
 * (`maxTaskRetries`) or fail with ACTOR_DIED.
 */

import type { EncodedValue } from '../sdk/codec.ts'
import { ActorDiedError, NameTakenError, serializeError } from '../sdk/errors.ts'
import type { Task, TaskSpec } from './task.ts'
import type { WorkerHandle } from './worker/worker-handle.ts'

/** Calls of an actor sent to its thread beyond those it runs at once, so that it never waits for the next. */
const PIPELINE = 256

export type ActorState = 'pending' | 'alive' | 'restarting' | 'dead'

/** How an actor is made: its class (`name@version`), constructor arguments and options. */
export interface ActorSpec extends TaskSpec {
  /** A name unique among the live actors, if given. */
  name?: string | undefined
  /** Lives until killed, whatever its idle time (`lifetime: 'detached'`). */
  detached?: boolean | undefined
}

export interface ActorInfo {
  id: string
  class: string
  name: string | null
  state: ActorState
  restarts: number
  /** Calls submitted and not finished. */
  pending: number
  node?: string | undefined
  /** Why it died, if it did. */
  error?: ReturnType<typeof serializeError> | undefined
}

interface Actor {
  spec: ActorSpec
  state: ActorState
  restarts: number
  maxRestarts: number
  maxConcurrency: number
  /** Its thread, once placed. */
  host: WorkerHandle | undefined
  /** Its constructor's call, until it runs; and whether that call's arguments are ready. */
  construct: Task | undefined
  constructReady: boolean
  /** Next sequence number to give a method call, and the next to run. */
  nextSeq: number
  runSeq: number
  /** Method calls whose arguments are ready, by sequence number. */
  ready: Map<number, Task>
  /** Calls submitted and not settled, by id. */
  calls: Map<string, Task>
  running: number
  lastCallAt: number
  /** Made inside a function without a name: it ends once its id's object does (see released). */
  scoped: boolean
  /** Scoped, and its object is gone: it ends when its last call settles. */
  released: boolean
  /** Its last checkpoint, restored when it is made again. */
  checkpoint?: EncodedValue | undefined
  error?: ReturnType<typeof serializeError> | undefined
}

export interface ActorsOptions {
  /** A thread for a new actor (the least crowded, made if fewer than one per CPU). */
  host(): WorkerHandle
  run(worker: WorkerHandle, task: Task): void
  /** Settles a call that will not run (its actor is dead, or it was cancelled). */
  fail(task: Task, error: ReturnType<typeof serializeError>): void
  /** Makes the call of a constructor run again (a restart), not started yet. */
  construct(spec: ActorSpec, attempt: number): Task
  /** Starts a call made by construct (it becomes ready once its arguments are). */
  start(task: Task): void
  /** Tells a thread to drop an actor's instance. */
  drop(worker: WorkerHandle, id: string): void
  now?: () => number
}

export class Actors {
  readonly #actors = new Map<string, Actor>()
  readonly #names = new Map<string, string>()
  readonly #aliases = new Map<string, string>()
  readonly #o: ActorsOptions
  readonly #now: () => number
  /** Actors that may have a call to run, in the order they are looked at. */
  readonly #runnable = new Set<Actor>()
  /** Live actors per thread. */
  readonly #on = new Map<WorkerHandle, number>()

  constructor(options: ActorsOptions) {
    this.#o = options
    this.#now = options.now ?? Date.now
  }

  /**
   * Records a new actor; its constructor call (`spec.id`) follows as its
   * first task. False if the id is taken. A `scoped` actor ends once the
   * object of its id is freed (see released).
   */
  create(spec: ActorSpec, scoped = false): boolean {
    if (this.#actors.has(spec.id)) return false
    if (spec.name !== undefined && this.#names.has(spec.name)) {
      throw new NameTakenError(`an actor named ${spec.name} exists already`)
    }
    const o = spec.options
    this.#actors.set(spec.id, {
      spec,
      state: 'pending',
      restarts: 0,
      maxRestarts: o.maxRestarts ?? 0,
      maxConcurrency: o.maxConcurrency ?? 1,
      host: undefined,
      construct: undefined,
      constructReady: false,
      nextSeq: 0,
      runSeq: 0,
      ready: new Map(),
      calls: new Map(),
      running: 0,
      lastCallAt: this.#now(),
      scoped,
      released: false,
    })
    if (spec.name !== undefined) this.#names.set(spec.name, spec.id)
    return true
  }

  /** An actor by id, or by name, or by an id that stands for it (see alias). */
  find(idOrName: string): string | undefined {
    if (this.#actors.has(idOrName)) return idOrName
    return this.#names.get(idOrName) ?? this.#aliases.get(idOrName)
  }

  /** Calls to `id` go to actor `to` (a function asked for a named actor with getIfExists, under an id of its own). */
  alias(id: string, to: string): void {
    this.#aliases.set(id, to)
  }

  info(id: string): ActorInfo | undefined {
    const a = this.#actors.get(id)
    if (!a) return undefined
    return {
      id,
      class: a.spec.fn,
      name: a.spec.name ?? null,
      state: a.state,
      restarts: a.restarts,
      pending: a.calls.size,
      ...(a.error ? { error: a.error } : {}),
    }
  }

  /** How many live actors a thread holds. */
  on(worker: WorkerHandle): number {
    return this.#on.get(worker) ?? 0
  }

  list(): ActorInfo[] {
    return [...this.#actors.keys()].flatMap((id) => this.info(id) ?? [])
  }

  /** A call (the constructor's, or a method's) is submitted: methods run in this order. */
  submitted(task: Task): void {
    const a = this.#actor(task)
    if (!a || a.state === 'dead') return
    if (task.actor?.method === null) {
      a.construct = task
      a.constructReady = false
    } else {
      task.actorSeq = a.nextSeq++
    }
    a.calls.set(task.id, task)
    a.lastCallAt = this.#now()
  }

  /** A call's arguments are ready (or it is to run again): it runs in its turn. */
  ready(task: Task): void {
    const a = this.#actor(task)
    if (!a || a.state === 'dead' || !a.calls.has(task.id)) {
      this.#o.fail(task, died(task, a))
      return
    }
    if (task.actor?.method === null) a.constructReady = true
    else {
      const seq = task.actorSeq ?? 0
      a.ready.set(seq, task)
      // A call run again after its thread died goes first.
      if (seq < a.runSeq) a.runSeq = seq
    }
    this.#runnable.add(a)
  }

  /** Sends the calls whose turn it is to their actors' threads. */
  dispatch(): void {
    for (const a of this.#runnable) {
      for (;;) {
        if (a.construct) {
          // The constructor runs alone, first.
          if (!a.constructReady || a.running > 0) break
          const task = a.construct
          a.construct = undefined
          this.#start(a, task)
          break
        }
        const next = a.ready.get(a.runSeq)
        // Calls go to the actor's thread ahead of their turn (it runs them in order, maxConcurrency at a time).
        if (!next || a.state !== 'alive' || a.running >= a.maxConcurrency + PIPELINE) break
        a.ready.delete(a.runSeq)
        a.runSeq += 1
        this.#start(a, next)
      }
      if ((a.ready.size === 0 && !a.construct) || a.state === 'dead') this.#runnable.delete(a)
    }
  }

  /** A call settled (ran, failed, or was cancelled): the next may run. */
  settled(task: Task, ok: boolean): void {
    const a = this.#actor(task)
    if (!a?.calls.delete(task.id)) return
    a.lastCallAt = this.#now()
    a.running = Math.max(0, a.running - 1)
    if (task.actor?.method === null && a.state !== 'dead') {
      if (ok) a.state = 'alive'
      else {
        this.#die(a, undefined)
        return
      }
    }
    if (a.released && a.calls.size === 0) this.#die(a, released(a))
    else if (a.ready.size > 0) this.#runnable.add(a)
  }

  /**
   * The object of an id was freed. For a scoped actor (made inside a
   * function, without a name, not detached), that object is held by every
   * handle to it, in threads and in stored values, and by the result of
   * whatever holds one: when it goes, the actor ends, once its calls have.
   */
  released(id: string): void {
    const a = this.#actors.get(id)
    if (!a?.scoped || a.state === 'dead') return
    a.released = true
    if (a.calls.size === 0) this.#die(a, released(a))
  }

  /**
   * A thread died: each actor it held is made again on another thread while
   * its restarts last (its calls in flight run again after it, as their
   * maxTaskRetries allow, see TaskRunner.crashed), else dies with its calls.
   */
  hostDied(worker: WorkerHandle): void {
    this.#on.delete(worker)
    for (const a of this.#actors.values()) {
      if (a.host !== worker || a.state === 'dead') continue
      a.host = undefined
      a.running = 0
      if (a.restarts >= a.maxRestarts) {
        this.#die(
          a,
          new ActorDiedError(`actor ${a.spec.id} died with its thread (maxRestarts ${a.maxRestarts})`),
        )
        continue
      }
      a.restarts += 1
      a.state = 'restarting'
      const task = this.#o.construct(a.spec, a.restarts)
      a.construct = task
      a.constructReady = false
      a.calls.set(task.id, task)
      this.#o.start(task)
    }
  }

  /** Kills an actor: its queued calls fail with ACTOR_DIED, its name is free again. False if unknown or dead. */
  kill(id: string, why = `actor ${id} was killed`): boolean {
    const a = this.#actors.get(id)
    if (!a || a.state === 'dead') return false
    this.#die(a, new ActorDiedError(why))
    return true
  }

  /** An actor's state from its checkpoint(): restored when it is made again. */
  checkpointed(id: string, state: EncodedValue): void {
    const a = this.#actors.get(id)
    if (a && a.state !== 'dead') a.checkpoint = state
  }

  checkpointOf(id: string): EncodedValue | undefined {
    return this.#actors.get(id)?.checkpoint
  }

  /** Kills the actors idle past their TTL (`ttlS`, default an hour since their last call), but the detached. */
  expire(defaultTtlMs: number): void {
    const now = this.#now()
    for (const [id, a] of this.#actors) {
      if (a.state === 'dead' || a.spec.options.lifetime === 'detached' || a.calls.size > 0) continue
      const ttlMs = a.spec.options.ttlS === undefined ? defaultTtlMs : a.spec.options.ttlS * 1000
      if (now - a.lastCallAt > ttlMs) this.kill(id, `actor ${id} was idle for longer than its ttlS`)
    }
  }

  #die(a: Actor, error: ActorDiedError | undefined): void {
    a.state = 'dead'
    if (error) a.error = serializeError(error)
    if (a.spec.name !== undefined && this.#names.get(a.spec.name) === a.spec.id)
      this.#names.delete(a.spec.name)
    if (a.host) {
      this.#o.drop(a.host, a.spec.id)
      this.#on.set(a.host, this.on(a.host) - 1)
    }
    const waiting = [...a.calls.values()]
    a.calls.clear()
    a.ready.clear()
    this.#runnable.delete(a)
    for (const task of waiting) this.#o.fail(task, died(task, a))
  }

  #start(a: Actor, task: Task): void {
    if (!a.host) {
      a.host = this.#o.host()
      this.#on.set(a.host, this.on(a.host) + 1)
    }
    a.running += 1
    this.#o.run(a.host, task)
  }

  #actor(task: Task): Actor | undefined {
    return task.actor ? this.#actors.get(task.actor.id) : undefined
  }
}

function released(a: Actor): ActorDiedError {
  return new ActorDiedError(`actor ${a.spec.id} ended: no handle to it is left`)
}

function died(task: Task, a: Actor | undefined): ReturnType<typeof serializeError> {
  return (
    a?.error ??
    serializeError(new ActorDiedError(`actor ${task.actor?.id} is dead: ${task.actor?.method}() did not run`))
  )
}
