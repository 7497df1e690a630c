/**
 * A joined node's HTTP API: probes open to all (`/healthz`, `/readyz`), and
 * under the cluster secret the internal routes for its head and peers: take
 * calls, serve objects (bytes streamed as they are, not re-encoded), store
 * and free them, give work to a thief, and take reports of calls it owns.
 */
import { type Context, Hono } from 'hono'
import { stream } from 'hono/streaming'
import { isBytes, readBytes, unreadBytes } from '../../node/http/bodies.ts'
import { FollowedLogs } from '../../node/http/follow-logs.ts'
import {
  bytesResponse,
  errorResponse,
  fileResponse,
  STREAM_FROM_DISK_BYTES,
} from '../../node/http/responses.ts'
import type { LocalNode } from '../../node/node.ts'
import { parseTaskFilter } from '../../node/recent-tasks.ts'
import { isSettled, type ObjectEntry, type ObjectStore, objectsLimit } from '../../node/store/object-store.ts'
import { type EncodedValue, isObjectId, JSON_TYPE } from '../../sdk/codec.ts'
import {
  BadRequestError,
  ERROR_STATUS,
  MagpieError,
  NotFoundError,
  ObjectNotFoundError,
  type SerializedError,
  serializeError,
} from '../../sdk/errors.ts'
import type { InternalClient } from '../client.ts'
import {
  CallBatch,
  Cancel,
  fromWireArg,
  Moved,
  Nudge,
  type ObjectMeta,
  Release,
  ROUTES,
  readBody,
  SettledReport,
  StealRequest,
  type StolenCall,
  waitSeconds,
} from '../protocol.ts'
import { requireClusterSecret } from '../secret.ts'

export interface InternalApiOptions {
  node: LocalNode
  client: InternalClient
  secret: string
  /** Whether the node is ready for work (registered with its head). */
  ready(): boolean
  /** Called for each call the head placed here, so that its result can be reported. */
  accepted(id: string, epoch: number): void
  /** Where a call went that was stolen from here: reads of its result are sent there. */
  movedTo(id: string): string | undefined
  /** Gives a thief up to half of the calls queued here. */
  steal(thief: StealRequest): StolenCall[]
  /** Owners that have copied big results of calls stolen from them. */
  released(ids: string[]): void
  /** A peer has calls waiting (Nudge): look for work there now. */
  nudged(from: Nudge): void
  /** Results of calls a peer stole from here. */
  settled(report: SettledReport): void
  /** Calls of this node's that a thief of them passed on to another. */
  moved(body: Moved): void
  /** Cancels a call placed or stolen here. */
  cancel(id: string, how: { force: boolean; recursive: boolean }): void
  /** Whether a call was cancelled before it arrived here (the cancel overtook it): it is not run. */
  cancelledBefore(id: string): boolean
  /** Of these function versions, those this node cannot have, with why (the others it fetches first). */
  missingCode(refs: readonly string[]): Promise<Map<string, SerializedError>>
}

/** The raw value of a ready object, or its error, or 202 while it is unfinished. */
function objectReply(c: Context, id: string, entry: ObjectEntry | undefined, store: ObjectStore): Response {
  if (!entry) throw new ObjectNotFoundError(`no object ${id}`)
  const file =
    entry.status === 'ready' && entry.size >= STREAM_FROM_DISK_BYTES ? store.openOnDisk(id) : undefined
  if (file) return fileResponse(c, file)
  const value = entry.status === 'ready' ? store.value(id, false) : undefined
  if (value) {
    return value.kind === 'json'
      ? new Response(value.text, { headers: { 'content-type': JSON_TYPE } })
      : bytesResponse(c, value.bytes)
  }
  if (isSettled(entry)) {
    return errorResponse(entry.error ?? { code: 'TASK_CANCELLED', message: `object ${id} was cancelled` })
  }
  return c.json({ id, status: entry.status }, 202)
}

function metaOf(entry: ObjectEntry): ObjectMeta {
  const meta: ObjectMeta = {
    id: entry.id,
    status: entry.status,
    size: entry.size,
    contentType: entry.contentType,
    function: entry.function,
    attempts: entry.attempts,
    createdAt: entry.createdAt,
    ttlMs: entry.ttlMs,
    cached: entry.cached,
  }
  if (entry.error) meta.error = entry.error
  return meta
}

export function internalApi(options: InternalApiOptions): Hono {
  const { node, client } = options
  const app = new Hono()

  app.get('/healthz', (c) => c.json({ status: 'ok' }))
  app.get('/readyz', (c) =>
    options.ready() ? c.json({ status: 'ready' }) : c.json({ status: 'joining' }, 503),
  )

  app.use('/internal/*', requireClusterSecret(options.secret))

  app.get(ROUTES.actor, (c) => {
    const info = node.actors.info(c.req.param('id'))
    if (!info) throw new NotFoundError(`no actor ${c.req.param('id')} here`)
    return c.json(info)
  })

  app.delete(ROUTES.actor, (c) => {
    node.killActor(c.req.param('id'))
    return c.body(null, 204)
  })

  app.post(ROUTES.tasks, async (c) => {
    const calls = await readBody(c.req, CallBatch, 'calls')
    const missing = await options.missingCode(calls.map((call) => call.fn))
    const accepted: string[] = []
    for (const call of calls) {
      if (options.cancelledBefore(call.id)) continue
      const spec = {
        id: call.id,
        fn: call.fn,
        args: call.args.map(fromWireArg),
        options: call.options,
        parent: call.parent,
      }
      const why = missing.get(call.fn)
      if (why) {
        node.failUnknown(spec.id, spec.fn, why)
        accepted.push(call.id)
      } else if (call.actor?.method === null) {
        const { restore, ...actor } = call.actor
        const state = restore === undefined ? undefined : (fromWireArg(restore) as EncodedValue)
        if (node.createActor({ ...spec, actor }, undefined, state)) accepted.push(call.id)
      } else if (call.actor) {
        try {
          if (node.submit({ ...spec, actor: call.actor })) accepted.push(call.id)
        } catch (err) {
          // Its actor does not live here (any more): the call fails as the actor's would.
          node.failUnknown(spec.id, spec.fn, { code: 'ACTOR_DIED', message: (err as Error).message })
          accepted.push(call.id)
        }
      } else if (node.submit(spec)) accepted.push(call.id)
      options.accepted(call.id, call.epoch)
    }
    return c.json({ accepted })
  })

  app.post(ROUTES.steal, async (c) =>
    c.json({ calls: options.steal(await readBody(c.req, StealRequest, 'steal')) }),
  )

  app.post(ROUTES.nudge, async (c) => {
    options.nudged(await readBody(c.req, Nudge, 'nudge'))
    return c.body(null, 204)
  })

  app.post(ROUTES.release, async (c) => {
    options.released((await readBody(c.req, Release, 'release')).ids)
    return c.body(null, 204)
  })

  app.post(ROUTES.cancel, async (c) => {
    options.cancel(c.req.param('id'), await readBody(c.req, Cancel, 'cancel'))
    return c.body(null, 204)
  })

  app.post(ROUTES.moved, async (c) => {
    options.moved(await readBody(c.req, Moved, 'moved'))
    return c.body(null, 204)
  })

  app.post(ROUTES.settled, async (c) => {
    options.settled(await readBody(c.req, SettledReport, 'settled report'))
    return c.body(null, 204)
  })

  app.get(ROUTES.object, async (c) => {
    const id = c.req.param('id')
    const moved = options.movedTo(id)
    if (moved && !node.store.has(id))
      return c.redirect(client.objectUrl(moved, id, new URL(c.req.url).search), 307)
    const wait = waitSeconds(c.req.query('wait'))
    if (wait > 0) await node.store.whenSettled(id, wait * 1000)
    // The ids in the value leave this process: they keep their TTL. The object
    // itself does when a client reads it through the head (`seen`); a peer's
    // copy is needed only while its tasks are, which this node's pins cover.
    const entry = c.req.query('seen') === '1' ? node.store.seen(id) : node.store.seenInside(id)
    return objectReply(c, id, entry, node.store)
  })

  app.get(ROUTES.logs, (c) => {
    const id = c.req.param('id')
    const children = c.req.query('children') === '1'
    if (c.req.query('follow') !== '1') {
      const read = node.readLogs(id, children)
      return c.body(`${JSON.stringify({ read })}\n${JSON.stringify({ end: true })}\n`)
    }
    const followed = new FollowedLogs()
    const read = node.readLogs(id, children, followed.follow, true)
    return stream(c, async (out) => {
      await out.write(`${JSON.stringify({ read })}\n`)
      await followed.pipe(out, (lines) => lines.map((line) => `${JSON.stringify({ line })}\n`).join(''))
      await out.write(`${JSON.stringify({ end: true })}\n`)
    })
  })

  app.get(ROUTES.biggestObjects, (c) => c.json(node.biggestObjects(objectsLimit(c.req.query('limit')))))

  app.get(ROUTES.recentTasks, (c) => c.json(node.recentTasks.list(parseTaskFilter((k) => c.req.query(k)))))

  app.get(ROUTES.objectMeta, async (c) => {
    const id = c.req.param('id')
    const wait = waitSeconds(c.req.query('wait'))
    const entry = wait > 0 ? await node.store.whenSettled(id, wait * 1000) : node.store.lookup(id)
    if (!entry) throw new ObjectNotFoundError(`no object ${id}`)
    return c.json(metaOf(entry))
  })

  app.put(ROUTES.object, async (c) => {
    const id = c.req.param('id')
    if (!isObjectId(id)) throw new BadRequestError(`bad object id ${id}`)
    const ttl = Number(c.req.query('ttlMs'))
    const stored = { ttlMs: ttl > 0 ? ttl : undefined, visible: true }
    const raw = unreadBytes(c)
    if (raw && node.store.streamsToDisk(raw.length)) {
      await node.store.putFrom(id, raw.length, raw.body, stored)
      return c.body(null, 204)
    }
    const value: EncodedValue = isBytes(c)
      ? { kind: 'bytes', bytes: await readBytes(c) }
      : { kind: 'json', text: await c.req.text() }
    node.store.put(id, value, stored)
    return c.body(null, 204)
  })

  app.delete(ROUTES.object, async (c) => {
    const id = c.req.param('id')
    // A call stolen from here is freed where it went, too.
    const moved = options.movedTo(id)
    if (!node.delete(id) && moved) await client.deleteObject(moved, id)
    return c.body(null, 204)
  })

  app.notFound((c) => errorResponse({ code: 'NOT_FOUND', message: `no route ${c.req.method} ${c.req.path}` }))
  app.onError(function internalErrorHandler(err) {
    const plain =
      err instanceof MagpieError ? serializeError(err) : { code: 'INTERNAL' as const, message: err.message }
    return Response.json({ error: plain }, { status: ERROR_STATUS[plain.code] ?? 500 })
  })
  return app
}
