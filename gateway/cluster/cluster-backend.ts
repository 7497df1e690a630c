/**
 * The head's backend: places each call on a node, forwards it there in
 * batches, and owns its result: a directory of every object a client made,
 * with small values kept inline and the node that holds the rest. Results
 * come back as nodes report them; calls on a node that dies are placed again.
 */
import { request } from 'undici'
import { SECRET_HEADER, toWireArg, type WireArg, type WireCall } from '../../node/cluster/internal-api.ts'
import { fetchObject, INLINE_MAX, type Settled, safeJson } from '../../node/cluster/node-process.ts'
import type { TaskSpec } from '../../node/node.ts'
import { type ObjectEntry, ObjectStore, type SettledAs } from '../../node/store/object-store.ts'
import { SpillStore } from '../../node/store/spill.ts'
import type { TaskArg } from '../../node/worker/messages.ts'
import { asBuffer } from '../../node/worker/shared-bytes.ts'
import { BYTES_TYPE, contentTypeOf, type EncodedValue, JSON_TYPE } from '../../sdk/codec.ts'
import { errorFromBody, MagpieError, serializeError } from '../../sdk/errors.ts'
import type { CallOptions } from '../../sdk/types.ts'
import type { Backend, NodeInfo } from '../backend.ts'
import { ID_HEADER, streamResponse } from '../respond.ts'
import { capable, place } from './placement.ts'
import { type ClusterNode, type NodeRegistry, ownerOf } from './registry.ts'

/** Memory for the small results the head keeps itself (the rest stay on their nodes). */
const DIRECTORY_BYTES = 256 * 1024 * 1024

export interface ClusterBackendOptions {
  registry: NodeRegistry
  secret: string
  /** The config of a deployed function, for placement and retries. */
  config(fn: string): CallOptions | undefined
  ttlMs?: number
  /** Where the head's directory spills small results that do not fit its memory. */
  spillDir: string
}

/** A call placed on a node and not finished; which node, its directory entry says. */
interface Placed {
  spec: TaskSpec
  attempts: number
  maxRetries: number
}

export interface ClusterBackend extends Backend {
  /** Results reported by a node. */
  settled(nodeId: string, objects: Settled[]): void
  /** Calls a leaving node hands back, to place elsewhere. */
  handBack(nodeId: string, ids: string[]): void
  /** Places again what was running on a dead node. */
  nodeDied(node: ClusterNode): void
  /** Stops the directory's sweeper and deletes its spill files. */
  close(): void
}

export function clusterBackend(options: ClusterBackendOptions): ClusterBackend {
  const { registry, secret, config } = options
  const directory = new ObjectStore({
    maxBytes: DIRECTORY_BYTES,
    ttlMs: options.ttlMs ?? 3600_000,
    spill: new SpillStore({ dir: options.spillDir, limitBytes: Number.POSITIVE_INFINITY }),
  })
  const placed = new Map<string, Placed>()
  const outboxes = new Map<string, WireCall[]>()

  const addressOf = (nodeId: string | undefined) => (nodeId ? registry.get(nodeId)?.address : undefined)

  function wireArgs(args: TaskArg[], target: ClusterNode): WireArg[] {
    return args.map((arg): WireArg => {
      if (arg.kind !== 'ref') return toWireArg(arg)
      const entry = directory.lookup(arg.id)
      const value = entry?.status === 'ready' ? directory.value(arg.id) : undefined
      if (value?.kind === 'json') return value
      if (!entry?.node || entry.node === target.id) return { kind: 'ref', id: arg.id }
      const at = addressOf(entry.node)
      return at ? { kind: 'ref', id: arg.id, at } : { kind: 'ref', id: arg.id }
    })
  }

  /** Nodes with a batch on its way: the next waits for it, so that a node gets calls in order. */
  const sending = new Set<string>()

  function forward(node: ClusterNode, call: WireCall): void {
    let outbox = outboxes.get(node.id)
    if (!outbox) {
      outbox = []
      outboxes.set(node.id, outbox)
      if (!sending.has(node.id)) setImmediate(() => sendNext(node))
    }
    outbox.push(call)
  }

  function sendNext(node: ClusterNode): void {
    const batch = outboxes.get(node.id)
    outboxes.delete(node.id)
    if (!batch || batch.length === 0) {
      sending.delete(node.id)
      return
    }
    sending.add(node.id)
    request(`${node.address}/internal/tasks`, {
      method: 'POST',
      headers: { [SECRET_HEADER]: secret, 'content-type': JSON_TYPE },
      body: JSON.stringify(batch),
    })
      .then(async (response) => {
        const text = await response.body.text()
        if (response.statusCode >= 400) {
          // The node refused the batch: its calls fail with why, the node stays.
          const error = serializeError(errorFromBody(safeJson(text), response.statusCode))
          for (const call of batch) {
            placed.delete(call.id)
            directory.settle(call.id, { error })
          }
        }
      })
      .catch(() => {
        // The node cannot be reached: treat it as gone, and place its calls again.
        registry.markDead(node.id)
      })
      .finally(() => sendNext(node))
  }

  /** Places a call (again) and forwards it; false if no live node could run it. */
  function dispatch(job: Placed): boolean {
    const nodes = capable(registry.alive(), job.spec.options)
    const node = place(nodes, (n) => argumentBytesOn(job.spec, n))
    if (!node) return false
    node.placedSinceBeat += 1
    const entry = directory.lookup(job.spec.id)
    if (entry) entry.node = node.id
    forward(node, {
      id: job.spec.id,
      fn: job.spec.fn,
      args: wireArgs(job.spec.args, node),
      options: job.spec.options,
    })
    return true
  }

  function argumentBytesOn(spec: TaskSpec, node: ClusterNode): number {
    let bytes = 0
    for (const arg of spec.args) {
      if (arg.kind !== 'ref') continue
      const entry = directory.lookup(arg.id)
      if (entry?.node === node.id && !entry.stored) bytes += entry.size
    }
    return bytes
  }

  type Meta = Omit<ObjectEntry, 'refs' | 'bucket'>

  async function nodeMeta(node: ClusterNode, id: string, waitS: number): Promise<Meta | undefined> {
    const response = await request(`${node.address}/internal/objects/${id}/meta?wait=${waitS}`, {
      headers: { [SECRET_HEADER]: secret },
    })
    if (response.statusCode !== 200) {
      await response.body.dump()
      return undefined
    }
    return (await response.body.json()) as Meta
  }

  /** Records a node-made object's state here; while it is unfinished, waits for it on its node. */
  function settleFromMeta(node: ClusterNode, meta: Meta): void {
    if (meta.status === 'ready') {
      directory.settle(meta.id, {
        elsewhere: { size: meta.size, contentType: meta.contentType ?? BYTES_TYPE },
      })
    } else if (meta.status === 'failed' || meta.status === 'cancelled') {
      directory.settle(meta.id, {
        error: meta.error ?? { code: 'TASK_CANCELLED', message: 'cancelled' },
        cancelled: meta.status === 'cancelled',
      })
    } else {
      nodeMeta(node, meta.id, 60).then(
        (later) => (later ? settleFromMeta(node, later) : directory.delete(meta.id)),
        () =>
          directory.settle(meta.id, { error: { code: 'OBJECT_LOST', message: `node ${node.id} is gone` } }),
      )
    }
  }

  function fail(id: string, code: 'WORKER_CRASHED' | 'NO_CAPACITY', message: string, attempts: number): void {
    placed.delete(id)
    directory.settle(id, { error: { code, message, attempts } })
  }

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
    const response = await request(
      `${node.address}/internal/objects/${id}${ttlMs ? `?ttlMs=${ttlMs}` : ''}`,
      {
        method: 'PUT',
        headers: { [SECRET_HEADER]: secret, 'content-type': contentType, 'content-length': String(length) },
        body: body as Uint8Array,
      },
    )
    const text = await response.body.text()
    if (response.statusCode >= 400) throw errorFromBody(safeJson(text), response.statusCode)
    return node
  }

  /** Records a client's object that `node` stores; false if the id was taken meanwhile. */
  function recordStored(id: string, node: ClusterNode, ttlMs: number | undefined, as: SettledAs): boolean {
    if (!directory.create(id, null, { ttlMs, visible: true })) return false
    ;(directory.lookup(id) as ObjectEntry).node = node.id
    directory.settle(id, as)
    return true
  }

  const backend: ClusterBackend = {
    submit(spec) {
      const options = { ...config(spec.fn), ...spec.options }
      if (capable(registry.alive(), options).length === 0) {
        throw new MagpieError(`no live node can run ${spec.fn} (cpus or resources)`, { code: 'NO_CAPACITY' })
      }
      const ttlMs = options.ttlS === undefined ? undefined : options.ttlS * 1000
      if (!directory.create(spec.id, spec.fn, { ttlMs, visible: true })) return false
      const job: Placed = {
        spec: { ...spec, options },
        attempts: 1,
        maxRetries: options.maxRetries ?? 3,
      }
      placed.set(spec.id, job)
      dispatch(job)
      return true
    },

    async put(id, value, ttlMs) {
      if (directory.has(id)) return false
      const body = value.kind === 'json' ? Buffer.from(value.text) : asBuffer(value.bytes)
      const type = contentTypeOf(value)
      const node = await storeOnNode(id, body, body.byteLength, type, ttlMs)
      // Small JSON is kept here too, to answer without asking the node.
      const inline = value.kind === 'json' && body.byteLength <= INLINE_MAX
      return recordStored(
        id,
        node,
        ttlMs,
        inline ? { value } : { elsewhere: { size: body.byteLength, contentType: type } },
      )
    },

    // A big body goes through the head to its node as it arrives, never whole in the head's memory.
    streamsBody: (length) => length > INLINE_MAX,

    async putBody(id, length, body, ttlMs) {
      if (directory.has(id)) return false
      const node = await storeOnNode(id, body, length, BYTES_TYPE, ttlMs)
      return recordStored(id, node, ttlMs, { elsewhere: { size: length, contentType: BYTES_TYPE } })
    },

    lookup: (id) => directory.seen(id),

    async locate(id) {
      const owner = registry.get(ownerOf(id) ?? '')
      if (!owner || owner.state === 'dead') return false
      const meta = await nodeMeta(owner, id, 0)
      if (!meta) return false
      if (directory.create(id, meta.function, { ttlMs: meta.ttlMs, visible: true })) {
        const entry = directory.lookup(id) as ObjectEntry
        entry.node = owner.id
        entry.attempts = meta.attempts
        settleFromMeta(owner, meta)
      }
      return true
    },
    whenSettled: (id, timeoutMs) => directory.whenSettled(id, timeoutMs),
    onSettled: (id, listener) => directory.onSettled(id, listener),
    waitAny: (ids, count, timeoutMs) => directory.waitAny(ids, count, timeoutMs),

    valueHere: (id) => directory.value(id),

    // A value on a node passes through the head as it comes: the head never holds it whole.
    async streamValue(c, entry) {
      const at = entry.stored ? undefined : addressOf(entry.node)
      if (!at) return undefined
      const response = await request(`${at}/internal/objects/${entry.id}?seen=1`, {
        headers: { [SECRET_HEADER]: secret },
      })
      if (response.statusCode !== 200) {
        // Moved, unfinished there, or gone: the whole read below sorts it out.
        await response.body.dump()
        return undefined
      }
      const headers: Record<string, string> = { [ID_HEADER]: entry.id }
      for (const name of ['content-type', 'content-length']) {
        const value = response.headers[name]
        if (typeof value === 'string') headers[name] = value
      }
      return streamResponse(c, response.body, headers)
    },

    async readValue(entry: ObjectEntry): Promise<EncodedValue> {
      const here = directory.value(entry.id)
      if (here) return here
      const at = addressOf(entry.node)
      if (!at) throw new MagpieError(`object ${entry.id} was on a node that is gone`, { code: 'OBJECT_LOST' })
      return fetchObject(entry.id, at, secret, true)
    },

    async delete(id) {
      const entry = directory.lookup(id)
      if (!directory.delete(id)) return false
      placed.delete(id)
      const at = addressOf(entry?.node)
      // Done once the node has let go too: a read that follows finds it nowhere.
      if (at) {
        await request(`${at}/internal/objects/${id}`, {
          method: 'DELETE',
          headers: { [SECRET_HEADER]: secret },
        })
          .then((r) => r.body.dump())
          .catch(() => {})
      }
      return true
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

    settled(nodeId, objects) {
      for (const o of objects) {
        const job = placed.get(o.id)
        placed.delete(o.id)
        const entry = directory.lookup(o.id)
        if (entry) {
          entry.attempts = job ? job.attempts : o.attempts
          // The node that ran it holds the value (a thief, if the call was stolen).
          entry.node = nodeId
        }
        if (o.status === 'ready') {
          if (o.value !== undefined) directory.settle(o.id, { value: { kind: 'json', text: o.value } })
          else
            directory.settle(o.id, { elsewhere: { size: o.size, contentType: o.contentType ?? BYTES_TYPE } })
        } else if (o.error) {
          directory.settle(o.id, { error: o.error, cancelled: o.status === 'cancelled' })
        }
      }
    },

    handBack(_nodeId, ids) {
      for (const id of ids) {
        const job = placed.get(id)
        if (job && !dispatch(job)) fail(id, 'NO_CAPACITY', 'no live node is left to run it', job.attempts)
      }
    },

    close: () => directory.close(),

    nodeDied(node) {
      for (const [id, job] of placed) {
        if (directory.lookup(id)?.node !== node.id) continue
        if (job.attempts > job.maxRetries) {
          fail(id, 'WORKER_CRASHED', `node ${node.id} died while running it`, job.attempts)
          continue
        }
        job.attempts += 1
        if (!dispatch(job)) fail(id, 'NO_CAPACITY', 'no live node is left to run it', job.attempts)
      }
    },
  }
  return backend
}
