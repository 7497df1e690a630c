/**
 * The head's backend: what the gateway serves from when nodes do the work.
 * Calls go to the dispatcher, which places them; their results come back in
 * nodes' reports; client puts are stored on a node chosen by load; objects
 * are read from the directory (small JSON) or streamed from the node that
 * holds them. Objects the head does not know yet (made inside functions, or
 * held by nodes from before the head restarted) are looked up on the nodes.
 */
import { LRUCache } from 'lru-cache'
import type { ActorSpec } from '../../node/actors.ts'
import { Admission, type AdmissionLimits } from '../../node/admission.ts'
import type { Backend, NodeInfo } from '../../node/backend.ts'
import type { LogsRead } from '../../node/call-logs.ts'
import { errorResponse, pendingResponse, streamResponse } from '../../node/http/responses.ts'
import type { CancelRequest } from '../../node/node.ts'
import type { TaskSpec } from '../../node/task.ts'
import { asBuffer } from '../../node/worker/shared-bytes.ts'
import { BYTES_TYPE, contentTypeOf, type EncodedValue, ID_HEADER } from '../../sdk/codec.ts'
import { MagpieError, type SerializedError } from '../../sdk/errors.ts'
import type { CallOptions } from '../../sdk/types.ts'
import { type InternalClient, isUnreachable } from '../client.ts'
import { warn } from '../log.ts'
import { INLINE_MAX, type Moved, ownerOf, type SettledReport, type WireArg } from '../protocol.ts'
import { HeadActors } from './actors.ts'
import { Directory, type DirectoryRecord, type Outcome } from './directory.ts'
import { Dispatcher } from './dispatcher.ts'
import { Journal } from './journal.ts'
import { place } from './placement.ts'
import { Recovery } from './recovery.ts'
import type { ClusterNode, NodeRegistry } from './registry.ts'
import type { StateSnapshot, StateStore } from './state/store.ts'

/** How long a follow of a call's logs stays open after it settled, for the lines still on their way from other nodes. */
const LAST_LINES_MS = 300

export interface ClusterBackendOptions {
  registry: NodeRegistry
  client: InternalClient
  /** The config of a deployed function, for placement and retries. */
  config(fn: string): CallOptions | undefined
  ttlMs?: number
  /** Where the directory spills small values that do not fit its memory. */
  spillDir: string
  /** Bounds on the calls in flight in the cluster (backpressure; defaults from memory). */
  admission?: AdmissionLimits | undefined
  /** Where what the head owns is kept, to be served again after a restart. */
  state?: StateStore | undefined
}

export interface ClusterBackend extends Backend {
  /** Results reported by a node. */
  settled(report: SettledReport): void
  /** Calls that were stolen from the node they were placed on. */
  moved(body: Moved): void
  /** Calls a leaving node hands back, to place elsewhere. */
  handBack(ids: readonly string[]): void
  /** Places again what was running on a dead node. */
  nodeDied(node: ClusterNode): void
  /** The head's record of an object, for its nodes. */
  record(id: string): DirectoryRecord | undefined
  /** The address of a node, if it is known. */
  addressOf(nodeId: string | undefined): string | undefined
  /** An actor a node made inside a function. */
  adoptActor(spec: ActorSpec, node: string): void
  /** An actor's latest checkpoint, from its node. */
  actorCheckpointed(id: string, state: WireArg): void
  /** A node joined (or joined again). */
  joined(node: ClusterNode): void
  /**
   * Serves again what the state kept from an earlier run of the head; after
   * `waitMs` (for its nodes to join again) reconciles calls in flight with them.
   */
  restore(kept: StateSnapshot, waitMs: number): { calls: number; objects: number }
  /** Stops the directory's sweeper and deletes its spill files. */
  close(): void
}

/** How a call that failed or was cancelled on a node settles here. */
function failure(status: 'failed' | 'cancelled', error: SerializedError | undefined): Outcome {
  return {
    error: error ?? { code: 'TASK_CANCELLED', message: 'cancelled' },
    cancelled: status === 'cancelled',
  }
}

export function clusterBackend(options: ClusterBackendOptions): ClusterBackend {
  const { registry, client, config } = options
  const directory = new Directory({
    ttlMs: options.ttlMs ?? 3600_000,
    spillDir: options.spillDir,
    forgotten: (id) => dispatcher.forget(id),
  })
  const dispatcher = new Dispatcher({ registry, directory, client, actorNode: (id) => actors.nodeOf(id) })
  const actors = new HeadActors({
    registry,
    directory,
    client,
    place: (spec) => {
      dispatcher.submit({ ...spec, options: { ...config(spec.fn), ...spec.options } })
    },
  })
  const recovery = new Recovery({ registry, client, directory, dispatcher })
  const journal = options.state && new Journal(options.state)
  directory.keepIn(journal)
  const admission = new Admission(options.admission ?? {}, () => dispatcher.inFlight())
  /** Ids freed lately: a late report of their call must not bring them back. */
  const freed = new LRUCache<string, true>({ max: 100_000 })

  const addressOf = (nodeId: string | undefined) => (nodeId ? registry.get(nodeId)?.address : undefined)

  /** Stores a value on a node chosen by load; the node's refusal (OBJECT_STORE_FULL, say) is the caller's error. */
  async function storeOnNode(
    id: string,
    body: Uint8Array | AsyncIterable<Uint8Array>,
    length: number,
    contentType: string,
    ttlMs: number | undefined,
  ): Promise<ClusterNode> {
    const node = place(registry.alive(), () => 0)
    if (!node) throw new MagpieError('no live node to store the object on', { code: 'NO_CAPACITY' })
    await client.putObject(node.address, id, body, length, contentType, ttlMs)
    return node
  }

  /** Records a client's object that `node` stores; false if the id was taken meanwhile. */
  function recordStored(
    id: string,
    node: ClusterNode,
    ttlMs: number | undefined,
    value: EncodedValue | undefined,
    size: number,
    contentType: string,
  ): boolean {
    if (!directory.create(id, null, { ttlMs, node: node.id, owned: true })) return false
    directory.settle(id, value ? { value, node: node.id } : { held: { node: node.id, size, contentType } })
    return true
  }

  /** Cancels an unfinished call: settled here at once, and told to the node that has it. */
  async function cancelCall(id: string, how: CancelRequest): Promise<boolean> {
    const record = directory.lookup(id)
    if (!record) return false
    if (record.status !== 'pending' && record.status !== 'running') return true
    const at = addressOf(dispatcher.forget(id) ?? record.node)
    directory.settle(id, {
      error: { code: 'TASK_CANCELLED', message: `call ${id} was cancelled` },
      cancelled: true,
    })
    if (at) {
      await client.cancel(at, id, how).catch((err: unknown) => {
        // It runs on and its result is discarded here; said, so that it is never silent.
        warn('a node did not hear a cancel', { node: record.node, call: id, cause: err })
      })
    }
    return true
  }

  return {
    actors: {
      // Its class's config (maxRestarts...) under the options it is made with, as the head keeps it.
      create: async (spec, getIfExists) => {
        // A name held by an actor that has since died on its node (its TTL ran out) is free again.
        const held = spec.name === undefined ? undefined : actors.find(spec.name)
        if (held !== undefined) await actors.info(held)
        return actors.create({ ...spec, options: { ...config(spec.fn), ...spec.options } }, getIfExists)
      },
      find: async (idOrName) => {
        const id = actors.find(idOrName)
        return id === undefined ? undefined : actors.info(id)
      },
      list: () => actors.list(),
      call(spec) {
        const actorId = spec.actor?.id as string
        actors.check(actorId)
        // From a node (a function's call of an actor elsewhere), it comes without its class.
        if (spec.fn === '') spec = { ...spec, fn: actors.classOf(actorId) as string }
        if (!directory.create(spec.id, spec.fn, { owned: true })) return false
        if (actors.nodeOf(actorId) === undefined) {
          directory.settle(spec.id, { error: { code: 'ACTOR_DIED', message: `actor ${actorId} is dead` } })
          return true
        }
        dispatcher.submit({ ...spec, options: { ...config(spec.fn), ...spec.options } })
        return true
      },
      kill: (id) => actors.kill(id),
    },
    admit: (calls, bytes) => admission.admit(calls, bytes),

    submit(spec: TaskSpec) {
      const options = { ...config(spec.fn), ...spec.options }
      if (!dispatcher.canPlace(options)) {
        throw new MagpieError(`no live node can run ${spec.fn} (cpus or resources)`, { code: 'NO_CAPACITY' })
      }
      const ttlMs = options.ttlS === undefined ? undefined : options.ttlS * 1000
      if (!directory.create(spec.id, spec.fn, { ttlMs, owned: true })) return false
      journal?.called(spec, ttlMs)
      dispatcher.submit({ ...spec, options })
      return true
    },

    async put(id, value, ttlMs) {
      if (directory.lookup(id)) return false
      const body = value.kind === 'json' ? Buffer.from(value.text) : asBuffer(value.bytes)
      const type = contentTypeOf(value)
      const node = await storeOnNode(id, body, body.byteLength, type, ttlMs)
      // Small JSON is kept here too, to answer without asking the node.
      const inline = value.kind === 'json' && body.byteLength <= INLINE_MAX
      return recordStored(id, node, ttlMs, inline ? value : undefined, body.byteLength, type)
    },

    // A big body goes through the head to its node as it arrives, never whole in the head's memory.
    streamsBody: (length) => length > INLINE_MAX,

    async putBody(id, length, body, ttlMs) {
      if (directory.lookup(id)) return false
      const node = await storeOnNode(id, body, length, BYTES_TYPE, ttlMs)
      return recordStored(id, node, ttlMs, undefined, length, BYTES_TYPE)
    },

    lookup: (id) => directory.seen(id),
    record: (id) => directory.lookup(id),
    addressOf,

    async locate(id) {
      const named = registry.get(ownerOf(id) ?? '')
      if (named?.state === 'dead') {
        // Made on a node that died, which owned it: gone with it, and said so like every lost object.
        if (directory.create(id, null, { node: named.id })) {
          const message = `object ${id} was made on node ${named.id}, which died, and it died with its owner`
          directory.settle(id, { error: { code: 'OBJECT_LOST', message } })
        }
        return true
      }
      // An id that names no live node may be held by any: a put of a head that has restarted since.
      const candidates = named ? [named] : registry.alive()
      const found = await recovery.findOnNodes(id, candidates)
      if (!found) return false
      const [node, meta] = found
      if (directory.create(id, meta.function, { ttlMs: meta.ttlMs, node: node.id })) {
        directory.locate(id, node.id, meta.attempts)
        recovery.settleFromMeta(node, meta)
      }
      return true
    },
    whenSettled: (id, timeoutMs) => directory.whenSettled(id, timeoutMs),
    onSettled: (id, listener) => directory.onSettled(id, listener),
    waitAny: (ids, count, timeoutMs) => directory.waitAny(ids, count, timeoutMs),

    valueHere: (id) => directory.value(id),

    // A value on a node passes through the head as it comes: the head never holds it whole.
    async streamValue(c, entry) {
      const at = directory.value(entry.id) ? undefined : addressOf(entry.node)
      if (!at) return undefined
      let found: Awaited<ReturnType<InternalClient['streamObject']>>
      try {
        found = await client.streamObject(at, entry.id)
      } catch (err) {
        await recovery.unreachable(entry.node, err)
        const now = directory.lookup(entry.id)
        // Being made again: the reader polls, and waits for it.
        if (now?.status === 'pending' || now?.status === 'running')
          return pendingResponse(c, entry.id, now.status)
        if (now?.error) return errorResponse(now.error, { [ID_HEADER]: entry.id })
        // Not known gone yet: the reader asks again shortly.
        if (isUnreachable(err)) return pendingResponse(c, entry.id, 'running')
        throw err
      }
      // Moved, unfinished there, or gone: the whole read sorts it out.
      if (!found) return undefined
      return streamResponse(c, found.body, { ...found.headers, [ID_HEADER]: entry.id })
    },

    async readValue(entry) {
      const here = directory.value(entry.id)
      if (here) return here
      const at = addressOf(entry.node)
      if (!at) throw new MagpieError(`object ${entry.id} was on a node that is gone`, { code: 'OBJECT_LOST' })
      return client.readObject(entry.id, at, true).catch(async (err: unknown) => {
        await recovery.unreachable(entry.node, err)
        throw err
      })
    },

    cancel: cancelCall,

    async delete(id) {
      await cancelCall(id, { force: false, recursive: true })
      freed.set(id, true)
      const record = directory.lookup(id)
      if (!directory.delete(id)) return false
      dispatcher.forget(id)
      const at = addressOf(record?.node)
      // Done once the node has let go too: a read that follows finds it nowhere.
      if (at) {
        await client.deleteObject(at, id).catch((err: unknown) => {
          // Its TTL there frees it later; say so rather than leave it unsaid.
          warn('a node did not free a deleted object', { node: record?.node, object: id, cause: err })
        })
      }
      return true
    },

    /**
     * A call's lines: every live node is asked (a call's children may have run
     * anywhere, and each node knows which calls ran under which); with
     * `follow`, their lines as they come, until the call settles.
     */
    async logs(id, children, follow) {
      const nodes = registry.alive()
      const reader = new AbortController()
      follow?.signal.addEventListener('abort', () => reader.abort(), { once: true })
      const streams = nodes.map((n) =>
        client.logs(n.address, id, children, follow !== undefined, reader.signal),
      )
      const firsts = await Promise.all(streams.map((s) => s.next().catch(() => undefined)))
      const read: LogsRead = { lines: [], gone: [], known: directory.lookup(id) !== undefined }
      for (const first of firsts) {
        const part = first?.value?.read
        if (!part) continue
        read.lines.push(...part.lines)
        read.gone.push(...part.gone)
        read.known ||= part.known
      }
      read.lines.sort((a, b) => a.t - b.t)
      if (follow) {
        const finish = () =>
          setTimeout(() => {
            reader.abort()
            follow.end()
          }, LAST_LINES_MS).unref()
        // A call made inside a function is unknown here: it has settled once the nodes that know it are done.
        const knownHere = directory.lookup(id) !== undefined
        let knowing = firsts.filter((f) => f?.value?.read?.known).length
        streams.forEach((s, i) => {
          const knows = firsts[i]?.value?.read?.known === true
          void (async () => {
            try {
              for await (const part of s) if (part.line) follow.line(part.line)
            } catch {
              // A node gone: its lines stop.
            }
            if (!knownHere && knows && --knowing === 0) finish()
          })()
        })
        // Every node follows until the call settles (and a moment more, for the last lines on their way).
        if (knownHere) {
          const off = directory.onSettled(id, finish)
          reader.signal.addEventListener('abort', off, { once: true })
        } else if (knowing === 0) finish()
      } else reader.abort()
      return read
    },

    async biggestObjects(limit) {
      const lists = await Promise.all(
        registry.alive().map(async (n) =>
          (await client.biggestObjects(n.address, limit).catch(() => [])).map((o) => ({
            ...o,
            node: n.id,
          })),
        ),
      )
      return lists
        .flat()
        .sort((a, b) => b.size - a.size)
        .slice(0, limit)
    },

    async tasks(filter) {
      const lists = await Promise.all(
        registry
          .alive()
          .map(async (n) =>
            (await client.recentTasks(n.address, filter).catch(() => [])).map((t) => ({ ...t, node: n.id })),
          ),
      )
      return lists
        .flat()
        .sort((a, b) => b.queuedAt - a.queuedAt)
        .slice(0, filter.limit ?? 100)
    },

    nodes(): NodeInfo[] {
      return registry.list().map((n) => ({
        ...n.stats,
        id: n.id,
        address: n.address,
        state: n.state,
        cpus: n.cpus,
        resources: n.resources,
        steals: { in: n.stats.stolen?.in ?? 0, out: n.stats.stolen?.out ?? 0 },
      }))
    },

    ready: () => registry.alive().length > 0,

    settled(report) {
      for (const o of report.objects) {
        if (o.status === 'lost') {
          dispatcher.lost(o.id, o.epoch, `node ${report.node} could not deliver its result`)
          continue
        }
        const held = o.status === 'ready' && o.value === undefined
        const attempts = dispatcher.finished(o.id, held) ?? o.attempts
        // A call of a head that has restarted since: its result is readable here all the same.
        if (!directory.lookup(o.id)) {
          if (freed.has(o.id)) continue
          directory.create(o.id, null, { owned: true })
        }
        // The node that ran it holds the value (a thief, if the call was stolen).
        directory.locate(o.id, report.node, attempts)
        if (o.status === 'ready') {
          directory.settle(
            o.id,
            o.value !== undefined
              ? { value: { kind: 'json', text: o.value }, node: report.node }
              : { held: { node: report.node, size: o.size, contentType: o.contentType ?? BYTES_TYPE } },
          )
        } else {
          directory.settle(o.id, failure(o.status, o.error))
        }
      }
    },

    moved: (body) => {
      for (const { id, epoch, thief } of body.calls) dispatcher.moved(id, epoch, thief)
    },
    handBack: (ids) => dispatcher.handBack(ids),
    nodeDied: (node) => {
      // Actors are made again elsewhere first, so that their calls run again after their constructor.
      actors.nodeDied(node.id)
      dispatcher.nodeDied(node)
      recovery.lostWith(node.id)
    },
    durable: async () => {
      try {
        await journal?.flushed()
      } catch (err) {
        throw new MagpieError(
          `the head could not keep this in its state (${options.state?.where}): ${(err as Error).message}`,
          {
            code: 'NOT_READY',
          },
        )
      }
    },
    joined: (node) => recovery.joined(node),
    adoptActor: (spec, node) => actors.adopt(spec, node),
    actorCheckpointed: (id, state) => actors.checkpointed(id, state),
    restore(kept, waitMs) {
      // What is read back is kept already: not written again.
      directory.keepIn(undefined)
      const restored = recovery.restore(kept, waitMs)
      directory.keepIn(journal)
      return restored
    },
    close: () => {
      recovery.close()
      directory.close()
    },
  }
}
