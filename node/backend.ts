/**
 * What the gateway serves from: where calls run and objects live. In the
 * embedded default it is one local node in the same process (here); on a
 * head it is the cluster behind it (cluster/head/backend.ts).
 */

import type { Context } from 'hono'
import { type EncodedValue, ID_HEADER } from '../sdk/codec.ts'
import { MagpieError, type SerializedError } from '../sdk/errors.ts'
import type { ActorInfo, ActorSpec } from './actors.ts'
import type { LogsFollow, LogsRead } from './call-logs.ts'
import { fileResponse, STREAM_FROM_DISK_BYTES } from './http/responses.ts'
import type { CancelRequest, LocalNode, NodeStats, TaskSpec } from './node.ts'
import type { TaskFilter, TaskRecord } from './recent-tasks.ts'
import type { HeldObject, ObjectStatus } from './store/object-store.ts'

/**
 * What the gateway reads of an object, wherever it is kept: a node's store
 * entry and the head's directory record both have this shape.
 */
export interface ObjectInfo {
  readonly id: string
  readonly status: ObjectStatus
  readonly error?: SerializedError | undefined
  /** Bytes of the encoded value, once ready. */
  readonly size: number
  readonly contentType: string | null
  readonly function: string | null
  readonly attempts: number
  /** Milliseconds since the epoch. */
  readonly createdAt: number
  /** The node that holds the value, where another process does. */
  readonly node?: string | undefined
}

export interface NodeInfo extends Omit<NodeStats, 'steals'> {
  id: string
  address: string
  state: 'alive' | 'leaving' | 'dead'
  resources: Record<string, number>
  steals: { in: number; out: number }
}

/** Actors, wherever they live. */
export interface ActorBackend {
  /**
   * Makes an actor (its constructor's call is `spec.id`, the actor's id);
   * with a name held already, NameTakenError, or with `getIfExists` the
   * actor that holds it. The actor's id, and whether it is new.
   */
  create(spec: ActorSpec, getIfExists: boolean): Promise<{ id: string; created: boolean }>
  /** An actor by id or name. */
  find(idOrName: string): Promise<ActorInfo | undefined>
  list(): Promise<ActorInfo[]>
  /** Submits a method call (`spec.actor`); false if its id is taken. ActorNotFoundError if the actor is unknown. */
  call(spec: TaskSpec): boolean
  /** Kills an actor; false if it is unknown or dead already. */
  kill(id: string): Promise<boolean>
}

export interface Backend {
  actors: ActorBackend
  /** Throws QueueFullError if `calls` more calls from outside, with `bytes` of arguments, would be too many. */
  admit(calls: number, bytes: number): void
  /** Starts a call; false if an object with its id exists already (nothing runs). */
  submit(spec: TaskSpec): boolean
  /**
   * Resolves once the calls and puts accepted so far would outlive this
   * process (kept in the head's state), so that accepting them may be
   * answered; where nothing is kept, absent.
   */
  durable?(): Promise<void>
  /** Stores a value; false if the id is taken. */
  put(id: string, value: EncodedValue, ttlMs?: number): Promise<boolean>
  /** The value of a ready object, wherever it is stored. */
  readValue(entry: ObjectInfo): Promise<EncodedValue>
  /** The value of a ready object if this process holds it. */
  valueHere(id: string): EncodedValue | undefined
  /** Whether a byte body of `length` is better passed on as it arrives (putBody) than read first. */
  streamsBody?(length: number): boolean
  /** Stores a byte body as it arrives; false if the id is taken. */
  putBody?(id: string, length: number, body: AsyncIterable<Uint8Array>, ttlMs?: number): Promise<boolean>
  /**
   * Answers with a ready object's value streamed from where it is (a file, or
   * the node that holds it), never whole in this process's memory; undefined
   * if it is better read whole (small, or in memory here).
   */
  streamValue?(c: Context, entry: ObjectInfo): Promise<Response | undefined>
  /** An object's entry, refreshing its lifetime. */
  lookup(id: string): ObjectInfo | undefined
  /** Finds an object not known here yet (made inside a function on some node); false if none has it. */
  locate(id: string): Promise<boolean>
  whenSettled(id: string, timeoutMs: number): Promise<ObjectInfo | undefined>
  /** Calls `listener` once the object settles (at once if it has; undefined if it is gone); returns an unsubscribe. */
  onSettled(id: string, listener: (entry: ObjectInfo | undefined) => void): () => void
  /** Settled ids among `ids`, in input order, at most `count`, once `count` settle or time runs out. */
  waitAny(ids: readonly string[], count: number, timeoutMs: number): Promise<string[]>
  /** Cancels an unfinished call wherever it is (see LocalNode.cancel); false if the object is unknown. */
  cancel(id: string, how: CancelRequest): Promise<boolean>
  /** Frees an object wherever it is stored; false if it is unknown. */
  delete(id: string): Promise<boolean>
  /**
   * What a call wrote, wherever it ran (with `children`, the calls it made,
   * down the tree); with `follow`, the lines to come, until it settles.
   */
  logs(id: string, children: boolean, follow?: LogsFollow): Promise<LogsRead>
  /** The calls seen lately on every node, newest first (GET /v1/tasks). */
  tasks(filter: TaskFilter): Promise<NodeTaskRecord[]>
  /** The biggest objects on every node, biggest first, with what holds them (GET /v1/objects?sort=size). */
  biggestObjects(limit: number): Promise<Array<HeldObject & { node: string }>>
  nodes(): NodeInfo[]
  ready(): boolean
}

/** A call seen lately, with the node it was seen on. */
export type NodeTaskRecord = TaskRecord & { node: string }

/** A backend on one node living in this process. */
export function localBackend(node: LocalNode, address: () => string): Backend {
  let ready = false
  node.ready().then(() => {
    ready = true
  })
  return {
    actors: localActors(node),
    admit: (calls, bytes) => node.admit(calls, bytes),
    submit: (spec) => node.submit(spec),
    put: async (id, value, ttlMs) => node.store.put(id, value, { ttlMs, visible: true }),
    readValue: async (entry) => {
      const value = node.store.value(entry.id, false)
      if (!value) throw new MagpieError(`object ${entry.id} is no longer stored`, { code: 'OBJECT_LOST' })
      return value
    },
    valueHere: (id) => node.store.value(id),
    streamsBody: (length) => node.store.streamsToDisk(length),
    putBody: (id, length, body, ttlMs) => node.store.putFrom(id, length, body, { ttlMs, visible: true }),
    streamValue: async (c, entry) => {
      if (entry.size < STREAM_FROM_DISK_BYTES) return undefined
      const file = node.store.openOnDisk(entry.id)
      return file && fileResponse(c, file, { [ID_HEADER]: entry.id })
    },
    lookup: (id) => node.store.seen(id),
    locate: async (id) => node.store.has(id),
    whenSettled: (id, timeoutMs) => node.store.whenSettled(id, timeoutMs),
    onSettled: (id, listener) => node.store.onSettled(id, listener),
    waitAny: (ids, count, timeoutMs) => node.store.waitAny(ids, count, timeoutMs),
    cancel: async (id, how) => node.cancel(id, how),
    delete: async (id) => node.delete(id),
    logs: async (id, children, follow) => node.readLogs(id, children, follow),
    tasks: async (filter) => node.recentTasks.list(filter).map((t) => ({ ...t, node: 'local' })),
    biggestObjects: async (limit) => node.biggestObjects(limit).map((o) => ({ ...o, node: 'local' })),
    nodes: () => {
      const { steals, ...stats } = node.stats()
      return [
        {
          id: 'local',
          address: address(),
          state: 'alive',
          resources: {},
          ...stats,
          steals: { in: steals, out: steals },
        },
      ]
    },
    ready: () => ready,
  }
}

/** The actors of a node in this process. */
function localActors(node: LocalNode): ActorBackend {
  return {
    async create(spec, getIfExists) {
      const held = spec.name === undefined ? undefined : node.actors.find(spec.name)
      if (held !== undefined && getIfExists) return { id: held, created: false }
      // A creation sent again (the same id) is answered as the first was.
      if (node.actors.info(spec.id)) return { id: spec.id, created: false }
      if (!node.createActor(spec))
        throw new MagpieError(`the id ${spec.id} is taken`, { code: 'BAD_REQUEST' })
      return { id: spec.id, created: true }
    },
    find: async (idOrName) => {
      const id = node.actors.find(idOrName)
      return id === undefined ? undefined : node.actors.info(id)
    },
    list: async () => node.actors.list(),
    call: (spec) => node.submit(spec),
    kill: async (id) => node.killActor(id),
  }
}
