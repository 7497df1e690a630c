/**
 * A node's internal HTTP API, for its head and its peers: take calls, serve
 * objects (bytes streamed as they are, not re-encoded), store and free them.
 * Every route wants the cluster secret.
 */
import { timingSafeEqual } from 'node:crypto'
import { type Context, Hono, type MiddlewareHandler } from 'hono'
import { isBytes, readBytes, unreadBytes } from '../../gateway/http-input.ts'
import { bytesResponse, fileResponse, STREAM_FROM_DISK_BYTES } from '../../gateway/respond.ts'
import { type EncodedValue, isObjectId, JSON_TYPE } from '../../sdk/codec.ts'
import {
  BadRequestError,
  ERROR_STATUS,
  MagpieError,
  ObjectNotFoundError,
  serializeError,
} from '../../sdk/errors.ts'
import { type CallOptions, checkCallOptions } from '../../sdk/types.ts'
import type { LocalNode } from '../node.ts'
import { isSettled, type ObjectEntry, type ObjectStore } from '../store/object-store.ts'
import type { TaskArg } from '../worker/messages.ts'
import { asBuffer, toShared } from '../worker/shared-bytes.ts'

export const SECRET_HEADER = 'x-magpie-secret'

/** An argument on the wire: as in a node, but bytes travel as base64 inside the JSON batch. */
export type WireArg = Exclude<TaskArg, { kind: 'bytes' }> | { kind: 'base64'; data: string }

/** A call as the head sends it to a node. */
export interface WireCall {
  id: string
  fn: string
  args: WireArg[]
  options: CallOptions
}

export interface InternalApiOptions {
  node: LocalNode
  secret: string
  /** Called for each call the head placed here, so that its result can be reported. */
  onAccepted(id: string): void
  /** Where a call went that was stolen from here: reads of its result are sent there. */
  movedTo(id: string): string | undefined
}

/** An argument for the wire: bytes as base64. */
export function toWireArg(arg: TaskArg): WireArg {
  return arg.kind === 'bytes' ? { kind: 'base64', data: asBuffer(arg.bytes).toString('base64') } : arg
}

/** Arguments from the wire, checked. */
export function checkArgs(args: unknown): TaskArg[] {
  if (!Array.isArray(args)) throw new BadRequestError('args must be an array')
  return args.map((a: { kind?: unknown; text?: unknown; id?: unknown; at?: unknown; data?: unknown }) => {
    if (a?.kind === 'json' && typeof a.text === 'string') return { kind: 'json', text: a.text }
    if (a?.kind === 'base64' && typeof a.data === 'string') {
      return { kind: 'bytes', bytes: toShared(Buffer.from(a.data, 'base64')) }
    }
    if (a?.kind === 'ref' && isObjectId(a.id)) {
      return typeof a.at === 'string' ? { kind: 'ref', id: a.id, at: a.at } : { kind: 'ref', id: a.id }
    }
    throw new BadRequestError(
      'each argument is {"kind": "json", "text"}, {"kind": "base64", "data"} or {"kind": "ref", "id", "at"?}',
    )
  })
}

/** The raw value of a ready object, or its error, or 202 while it is unfinished. */
export function objectReply(
  c: Context,
  id: string,
  entry: ObjectEntry | undefined,
  store: ObjectStore,
): Response {
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
    const error = entry.error ?? { code: 'TASK_CANCELLED' as const, message: `object ${id} was cancelled` }
    return Response.json({ error }, { status: ERROR_STATUS[error.code] })
  }
  return Response.json({ id, status: entry.status }, { status: 202 })
}

/** 403 for internal requests without the cluster secret. */
export function requireClusterSecret(secret: string): MiddlewareHandler {
  const expected = Buffer.from(secret)
  return async function requireSecret(c, next) {
    const given = Buffer.from(c.req.header(SECRET_HEADER) ?? '')
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new MagpieError('the cluster secret is missing or wrong', { code: 'FORBIDDEN' })
    }
    await next()
  }
}

export function internalApi(options: InternalApiOptions): Hono {
  const { node, secret } = options
  const app = new Hono()
  app.use('/internal/*', requireClusterSecret(secret))

  app.post('/internal/tasks', async (c) => {
    const calls = (await c.req.json()) as WireCall[]
    if (!Array.isArray(calls)) throw new BadRequestError('the body must be an array of calls')
    const accepted: string[] = []
    for (const call of calls) {
      if (!isObjectId(call?.id) || typeof call.fn !== 'string')
        throw new BadRequestError('each call needs an id and fn')
      const spec = {
        id: call.id,
        fn: call.fn,
        args: checkArgs(call.args),
        options: checkCallOptions(call.options),
      }
      if (node.submit(spec)) accepted.push(call.id)
      options.onAccepted(call.id)
    }
    return c.json({ accepted })
  })

  app.get('/internal/objects/:id', async (c) => {
    const id = c.req.param('id')
    const moved = options.movedTo(id)
    if (moved && !node.store.has(id))
      return c.redirect(`${moved}/internal/objects/${id}?${new URL(c.req.url).searchParams}`, 307)
    const wait = Number(c.req.query('wait') ?? 0)
    if (wait > 0) await node.store.whenSettled(id, Math.min(wait, 60) * 1000)
    // The ids in the value leave this process: they keep their TTL. The object
    // itself does when a client reads it through the head (`seen`); a peer's
    // copy is needed only while its tasks are, which this node's pins cover.
    const entry = c.req.query('seen') === '1' ? node.store.seen(id) : node.store.seenInside(id)
    return objectReply(c, id, entry, node.store)
  })

  /** An object's status, without its value; `?wait=S` waits for it to settle. */
  app.get('/internal/objects/:id/meta', async (c) => {
    const id = c.req.param('id')
    const wait = Number(c.req.query('wait') ?? 0)
    const entry =
      wait > 0 ? await node.store.whenSettled(id, Math.min(wait, 60) * 1000) : node.store.lookup(id)
    if (!entry) throw new ObjectNotFoundError(`no object ${id}`)
    const { refs: _refs, bucket: _bucket, ...meta } = entry
    return c.json(meta)
  })

  app.put('/internal/objects/:id', async (c) => {
    const id = c.req.param('id')
    if (!isObjectId(id)) throw new BadRequestError(`bad object id ${id}`)
    const ttl = Number(c.req.query('ttlMs'))
    const options = { ttlMs: ttl > 0 ? ttl : undefined, visible: true }
    const raw = unreadBytes(c)
    if (raw && node.store.streamsToDisk(raw.length)) {
      await node.store.putFrom(id, raw.length, raw.body, options)
      return c.body(null, 204)
    }
    const value: EncodedValue = isBytes(c)
      ? { kind: 'bytes', bytes: await readBytes(c) }
      : { kind: 'json', text: await c.req.text() }
    node.store.put(id, value, options)
    return c.body(null, 204)
  })

  app.delete('/internal/objects/:id', (c) => {
    node.delete(c.req.param('id'))
    return c.body(null, 204)
  })

  app.get('/internal/stats', (c) => c.json(node.stats()))

  app.onError(function internalErrorHandler(err) {
    const plain =
      err instanceof MagpieError ? serializeError(err) : { code: 'INTERNAL' as const, message: err.message }
    return Response.json({ error: plain }, { status: ERROR_STATUS[plain.code] ?? 500 })
  })
  return app
}
