/**
 * A node that joins a head: its local node behind the internal API, its
 * registration and heartbeats, the results it reports to the head (the owner
 * of the calls it placed here), and a clean leave that hands back queued calls.
 */
import { join } from 'node:path'
import { request } from 'undici'
import { canRun } from '../../gateway/cluster/placement.ts'
import { newNodeId, ownerOf } from '../../gateway/cluster/registry.ts'
import { listen } from '../../gateway/listen.ts'
import { FunctionRegistry } from '../../gateway/registry/registry.ts'
import { BYTES_TYPE, type EncodedValue, JSON_TYPE } from '../../sdk/codec.ts'
import { errorFromBody, serializeError } from '../../sdk/errors.ts'
import { LocalNode } from '../node.ts'
import type { ObjectEntry, ObjectStore } from '../store/object-store.ts'
import { argumentIds } from '../task.ts'
import { toShared } from '../worker/shared-bytes.ts'
import { checkArgs, internalApi, SECRET_HEADER, toWireArg } from './internal-api.ts'
import { rawGet } from './raw-get.ts'
import { type Peer, type StolenCall, Thief } from './thief.ts'

/** Results up to this size travel to the head inline; bigger ones stay here. */
export const INLINE_MAX = 100 * 1024
const HEARTBEAT_MS = 500
/** How long a node looks for an object the head says another node has, before it believes it is gone. */
const UNKNOWN_GRACE_MS = 3000

export interface NodeProcessOptions {
  head: string
  secret: string
  functionsDir: string
  bundleDir: string
  cpus?: number | undefined
  resources?: Record<string, number> | undefined
  host?: string | undefined
  port?: number | undefined
  objectStoreMemory?: number | undefined
  spillLimit?: number | undefined
  /** Values spill to spill/<node id> in it (default: a temporary folder). */
  stateDir?: string | undefined
}

/** What a node reports to the head when a call it placed settles. */
export interface Settled {
  id: string
  status: ObjectEntry['status']
  size: number
  contentType: string | null
  attempts: number
  error?: ObjectEntry['error']
  /** The JSON text of a small result. */
  value?: string
}

function settledOf(id: string, entry: ObjectEntry, store: ObjectStore): Settled {
  const settled: Settled = {
    id,
    status: entry.status,
    size: entry.size,
    contentType: entry.contentType,
    attempts: entry.attempts,
  }
  if (entry.error) settled.error = entry.error
  if (entry.status === 'ready' && entry.contentType === JSON_TYPE && entry.size <= INLINE_MAX) {
    // On its way out: read from disk if spilled, not brought back into memory.
    const value = store.value(id, false)
    if (value?.kind === 'json') settled.value = value.text
  }
  return settled
}

export async function call(method: string, url: string, secret: string, body?: unknown) {
  const response = await request(url, {
    method: method as 'POST',
    headers: { [SECRET_HEADER]: secret, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await response.body.text()
  if (response.statusCode >= 400) throw errorFromBody(safeJson(text), response.statusCode)
  return text === '' ? undefined : safeJson(text)
}

export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * Reads an object from the node at `at`, waiting while it is unfinished;
 * `forClient`: a client reads it, so it keeps its TTL there.
 */
export async function fetchObject(
  id: string,
  from: string,
  secret: string,
  forClient = false,
): Promise<EncodedValue> {
  let at = from
  // The call making it may still be on its way to that node (the head forwards in batches).
  const graceUntil = Date.now() + UNKNOWN_GRACE_MS
  for (;;) {
    // Bytes land in shared memory straight from the socket: one copy, by the kernel.
    const { status, headers, body } = await rawGet(
      `${at}/internal/objects/${id}?wait=60${forClient ? '&seen=1' : ''}`,
      { [SECRET_HEADER]: secret },
      BYTES_TYPE,
    )
    if (status === 202) continue
    if (status === 404 && Date.now() < graceUntil) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      continue
    }
    if (status === 307 && headers.location) {
      // The call was stolen: its result is where the thief is.
      at = new URL(headers.location, at).origin
      continue
    }
    const text = () => Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString()
    if (status >= 400) throw errorFromBody(safeJson(text()), status)
    if ((headers['content-type'] ?? '').startsWith(BYTES_TYPE))
      return { kind: 'bytes', bytes: toShared(body) }
    return { kind: 'json', text: text() }
  }
}

export async function startNodeProcess(options: NodeProcessOptions) {
  const head = options.head.replace(/\/+$/, '')
  const { secret } = options
  const functions = new FunctionRegistry({ bundleDir: options.bundleDir })
  await functions.deployAll(options.functionsDir)
  const wantedId = newNodeId()
  /** Calls the head placed here that a peer stole, by id: the thief's address. */
  const moved = new Map<string, string>()
  const node = new LocalNode({
    id: wantedId,
    functions,
    ...(options.cpus === undefined ? {} : { cpus: options.cpus }),
    ...(options.objectStoreMemory === undefined ? {} : { objectStoreMemory: options.objectStoreMemory }),
    ...(options.spillLimit === undefined ? {} : { spillLimit: options.spillLimit }),
    ...(options.stateDir === undefined ? {} : { spillDir: join(options.stateDir, 'spill', wantedId) }),
    fetchRemote: (id, at) => fetchObject(id, at, secret),
    locate: (id) => {
      const at = moved.get(id)
      if (at) return at
      // An id names the node that made it; any other the head can find.
      const owner = ownerOf(id)
      if (owner === nodeId) return undefined // made here, and gone
      return (owner && peerAddresses.get(owner)) || head
    },
  })
  /** The other nodes' addresses, by id, as the head last told. */
  const peerAddresses = new Map<string, string>()

  /**
   * Calls run here for someone else, by id: the URL of their owner (the head,
   * or the node a call was stolen from), where their results are reported.
   */
  const owners = new Map<string, string>()
  const outboxes = new Map<string, Settled[]>()
  /** Results of stolen calls kept here for their owner, until it has them. */
  const pinnedForOwner = new Set<string>()
  let nodeId = ''
  const sendReports = (to: string) => {
    const batch = outboxes.get(to) ?? []
    outboxes.delete(to)
    if (batch.length > 0) {
      call('POST', `${to}/internal/settled`, secret, { node: nodeId, address, objects: batch }).catch(
        () => {},
      )
    }
  }
  const report = (id: string, entry: ObjectEntry | undefined) => {
    const to = owners.get(id)
    owners.delete(id)
    if (!to || !entry) return
    let outbox = outboxes.get(to)
    if (!outbox) {
      outbox = []
      outboxes.set(to, outbox)
      setImmediate(() => sendReports(to))
    }
    const settled = settledOf(id, entry, node.store)
    outbox.push(settled)
    // The ids in a value sent away keep their TTL here.
    if (settled.value !== undefined) node.store.seenInside(id)
    // A peer owns it: once the report carries all of it, this node's copy is not needed.
    // (A big value stays pinned until the owner has copied it: see /release.)
    if (pinnedForOwner.has(id) && (settled.value !== undefined || settled.status !== 'ready')) {
      pinnedForOwner.delete(id)
      node.store.unpin(id)
    }
  }
  const runFor = (id: string, owner: string) => {
    owners.set(id, owner)
    node.store.onSettled(id, (entry) => report(id, entry))
  }
  /** Settles an object here with a copy of it from the node at `from`. */
  const copyFrom = (id: string, from: string) =>
    fetchObject(id, from, secret).then(
      (value) => node.store.settle(id, { value }),
      (err: unknown) => node.store.settle(id, { error: serializeError(err, 'OBJECT_LOST') }),
    )

  const app = internalApi({
    node,
    secret,
    onAccepted: (id) => runFor(id, head),
    movedTo: (id) => moved.get(id),
  })

  /** A peer with nothing to do takes up to half of the calls queued here. */
  app.post('/internal/steal', async (c) => {
    const thief = (await c.req.json()) as {
      address?: string
      holds?: string[]
      cpus?: number
      resources?: Record<string, number>
    }
    const max = Math.ceil(node.stats().queued / 2)
    const holds = new Set(Array.isArray(thief.holds) ? thief.holds : [])
    const tasks = node.giveAway(max, holds, (t) => canRun(t.options, thief.cpus ?? 1, thief.resources ?? {}))
    const calls = tasks.map((task): StolenCall => {
      // The result goes to the call's owner straight, never through this node.
      const owner = owners.get(task.id) ?? address
      if (owner !== address) {
        owners.delete(task.id)
        // Others may still look for it here, as the head last knew: point them on.
        if (thief.address) moved.set(task.id, thief.address)
        // Calls here that wait for it keep it pending, and get a copy from the thief.
        if (thief.address && node.store.waitedOn(task.id)) copyFrom(task.id, thief.address)
        else node.store.delete(task.id)
      }
      // The thief reads them from here later. Its result comes back here if this
      // node owns the call, whose pins keep them till then; else they keep their TTL.
      if (owner !== address) for (const id of argumentIds(task)) node.store.seen(id)
      const args = task.args.map((a) =>
        a.kind === 'ref' && !a.at && node.store.has(a.id)
          ? { kind: 'ref' as const, id: a.id, at: address }
          : toWireArg(a),
      )
      return { id: task.id, fn: task.fn, args, options: task.options, owner }
    })
    return c.json({ calls })
  })

  /** The owner of a stolen call has its big result now: the copy here is a copy like any other. */
  app.post('/internal/objects/:id/release', (c) => {
    const id = c.req.param('id')
    if (pinnedForOwner.delete(id)) node.keepAsCopy(id)
    return c.body(null, 204)
  })

  /** Results of calls a peer stole from here. */
  app.post('/internal/settled', async (c) => {
    const { address: from, objects } = (await c.req.json()) as { address: string; objects: Settled[] }
    for (const o of objects) {
      if (o.status === 'ready' && o.value !== undefined)
        node.store.settle(o.id, { value: { kind: 'json', text: o.value } })
      else if (o.status === 'ready') {
        // Once copied here, the thief's copy is just a copy (kept a while: more calls may want it there).
        copyFrom(o.id, from).then(() =>
          call('POST', `${from}/internal/objects/${o.id}/release`, secret).catch(() => {}),
        )
      } else if (o.error) node.store.settle(o.id, { error: o.error, cancelled: o.status === 'cancelled' })
    }
    return c.body(null, 204)
  })
  const server = await listen(app.fetch, options.port ?? 0, options.host ?? '127.0.0.1')
  await node.ready()
  const address = server.url

  const register = async () => {
    const answer = (await call('POST', `${head}/internal/nodes`, secret, {
      address,
      cpus: node.cpus,
      resources: options.resources ?? {},
      id: wantedId,
    })) as { id: string }
    nodeId = answer.id
  }
  await register()
  const thief = new Thief({
    node,
    secret,
    resources: options.resources ?? {},
    address,
    run: (stolen) => {
      for (const c of stolen) {
        const spec = { id: c.id, fn: c.fn, args: checkArgs(c.args), options: c.options }
        if (node.runStolen(spec, c.owner === head)) pinnedForOwner.add(c.id)
        runFor(c.id, c.owner)
      }
    },
  })
  const heartbeat = setInterval(() => {
    call('POST', `${head}/internal/nodes/${nodeId}/heartbeat`, secret, node.stats()).then(
      (answer) => {
        const peers = (answer as { peers?: Peer[] } | undefined)?.peers ?? []
        thief.setPeers(peers)
        peerAddresses.clear()
        for (const peer of peers) peerAddresses.set(peer.id, peer.address)
      },
      (err: { code?: string }) => {
        if (err?.code === 'NOT_FOUND') register().catch(() => {})
      },
    )
  }, HEARTBEAT_MS)

  let stopping: Promise<void> | undefined
  return {
    get id() {
      return nodeId
    },
    address,
    node,
    /** Leaves the cluster: queued calls go back to the head, running ones finish, then everything stops. */
    stop(): Promise<void> {
      stopping ??= (async () => {
        clearInterval(heartbeat)
        thief.stop()
        const handedBack = node.takeBackQueued((id) => owners.get(id) === head)
        for (const id of handedBack) owners.delete(id)
        await call('POST', `${head}/internal/nodes/${nodeId}/leave`, secret, { ids: handedBack }).catch(
          () => {},
        )
        const deadline = Date.now() + 30_000
        while (node.stats().running > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
        for (const to of [...outboxes.keys()]) sendReports(to)
        await server.close()
        await node.close()
      })()
      return stopping
    },
  }
}

export type NodeProcess = Awaited<ReturnType<typeof startNodeProcess>>
