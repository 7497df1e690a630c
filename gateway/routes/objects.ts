/** Objects: read (with long-poll), metadata, put, free, and wait on many. */
import { Hono } from 'hono'
import type { Backend, ObjectInfo } from '../../node/backend.ts'
import { unreadBytes } from '../../node/http/bodies.ts'
import { linesResponse } from '../../node/http/responses.ts'
import { objectsLimit } from '../../node/store/object-store.ts'
import { BYTES_TYPE, ID_HEADER, JSON_TYPE, newObjectId } from '../../sdk/codec.ts'
import { BadRequestError, ObjectNotFoundError } from '../../sdk/errors.ts'
import {
  checkId,
  MAX_WAIT_S,
  parseObject,
  parseSeconds,
  readValue,
  requireObjects,
  waitParam,
} from '../http-input.ts'
import { objectResponse } from '../respond.ts'

export function objectRoutes(backend: Backend): Hono {
  const app = new Hono()

  app.post('/objects', async (c) => {
    const header = c.req.header(ID_HEADER)
    const id = header === undefined ? newObjectId() : checkId(header)
    const ttl = c.req.query('ttlS')
    const ttlMs = ttl === undefined ? undefined : positiveSeconds(ttl) * 1000
    const raw = unreadBytes(c)
    if (raw && backend.putBody && backend.streamsBody?.(raw.length)) {
      // Too big to pass through memory: it goes where it will be kept as it arrives.
      await backend.putBody(id, raw.length, raw.body, ttlMs)
    } else {
      await backend.put(id, await readValue(c), ttlMs)
    }
    await backend.durable?.()
    c.header('Location', `/v1/objects/${id}`)
    return c.json({ id }, 201)
  })

  /** The biggest objects, biggest first, with where they are and what holds them (`magpie memory`). */
  app.get('/objects', async (c) => {
    const sort = c.req.query('sort') ?? 'size'
    if (sort !== 'size') throw new BadRequestError('sort must be size')
    return c.json(await backend.biggestObjects(objectsLimit(c.req.query('limit'))))
  })

  app.get('/objects/:id', async (c) => {
    const id = checkId(c.req.param('id'))
    const wait = waitParam(c)
    await requireObjects(backend, [id])
    const entry = wait === undefined ? backend.lookup(id) : await backend.whenSettled(id, wait * 1000)
    return objectResponse(c, id, entry, backend)
  })

  app.get('/objects/:id/meta', async (c) => {
    const id = checkId(c.req.param('id'))
    await requireObjects(backend, [id])
    const entry = backend.lookup(id)
    if (!entry) throw new ObjectNotFoundError(`no object ${id}`)
    const node = entry.node ?? backend.nodes()[0]?.id ?? null
    // A call is made with a version of its function (name@version): both are said.
    const [fn = null, version] = entry.function?.split('@') ?? []
    return c.json({
      id,
      status: entry.status,
      size: entry.size,
      contentType: entry.contentType,
      node,
      function: fn,
      ...(version ? { version } : {}),
      attempts: entry.attempts,
      createdAt: new Date(entry.createdAt).toISOString(),
      ...(entry.error ? { error: entry.error } : {}),
    })
  })

  /** Cancels a call: `{"force": false, "recursive": true}`; a finished one is left as it is. */
  app.post('/objects/:id/cancel', async (c) => {
    const id = checkId(c.req.param('id'))
    const text = await c.req.text()
    const body = text.trim() === '' ? {} : parseObject(text, '{"force": false, "recursive": true}')
    for (const key of Object.keys(body)) {
      if (key !== 'force' && key !== 'recursive') throw new BadRequestError(`${key} is not a cancel option`)
      if (typeof body[key] !== 'boolean') throw new BadRequestError(`${key} must be true or false`)
    }
    await requireObjects(backend, [id])
    if (!(await backend.cancel(id, { force: body.force === true, recursive: body.recursive !== false }))) {
      throw new ObjectNotFoundError(`no object ${id}`)
    }
    return c.json({ id, status: backend.lookup(id)?.status ?? 'cancelled' }, 202)
  })

  app.delete('/objects/:id', async (c) => {
    const id = checkId(c.req.param('id'))
    // An object made inside a function on some node may be unknown here until located. Not looked up:
    // that would count the handles in its value as seen by a client, and keep what they hold alive.
    const deleted = (await backend.delete(id)) || ((await backend.locate(id)) && (await backend.delete(id)))
    if (!deleted) throw new ObjectNotFoundError(`no object ${id}`)
    return c.body(null, 204)
  })

  app.post('/wait', async (c) => {
    const body = parseObject(await c.req.text(), '{"ids": [...], "numReturns": 1, "timeout": S}')
    const { ids, numReturns = Math.min(1, Array.isArray(ids) ? ids.length : 0), timeout } = body
    checkIds(ids)
    if (typeof numReturns !== 'number' || !Number.isInteger(numReturns) || numReturns < 0) {
      throw new BadRequestError('numReturns must be a non-negative integer')
    }
    if (numReturns > ids.length)
      throw new BadRequestError(`numReturns is ${numReturns} but only ${ids.length} ids`)
    const seconds = timeout === undefined || timeout === null ? MAX_WAIT_S : parseSeconds(timeout, 'timeout')
    await requireObjects(backend, ids)
    const ready = await backend.waitAny(ids, numReturns, seconds * 1000)
    const got = new Set(ready)
    return c.json({ ready, pending: ids.filter((id) => !got.has(id)) })
  })

  /**
   * Streams objects as they settle, one JSON line each, in the order they
   * settle: the results of many calls in one request. The stream ends when all
   * have settled or `timeout` (default and most 60) seconds pass.
   */
  app.post('/objects/stream', async (c) => {
    const body = parseObject(await c.req.text(), '{"ids": [...], "timeout": S}')
    const { ids, timeout } = body
    checkIds(ids)
    const seconds = timeout === undefined || timeout === null ? MAX_WAIT_S : parseSeconds(timeout, 'timeout')
    await requireObjects(backend, ids)
    return linesResponse(c, { 'content-type': 'application/x-ndjson' }, async (out) => {
      let remaining = ids.length
      let finish = () => {}
      const finished = new Promise<void>((resolve) => {
        finish = resolve
      })
      const offs = ids.map((id) =>
        backend.onSettled(id, (entry) => {
          out.write(settledLine(id, entry, backend))
          remaining -= 1
          if (remaining === 0) finish()
        }),
      )
      const timer = setTimeout(finish, seconds * 1000)
      void out.aborted.then(finish)
      if (ids.length === 0) finish()
      await finished
      clearTimeout(timer)
      for (const off of offs) off()
    })
  })

  return app
}

function checkIds(ids: unknown): asserts ids is string[] {
  if (!Array.isArray(ids)) throw new BadRequestError('ids must be an array of object ids')
  for (const id of ids) checkId(id)
  if (new Set(ids).size !== ids.length) throw new BadRequestError('ids holds the same id twice')
}

/** One line of an object stream: the value inline if it is JSON, else where to read it. */
function settledLine(id: string, entry: ObjectInfo | undefined, backend: Backend): string {
  const head = `{"id":${JSON.stringify(id)},"status":`
  if (!entry) {
    return `${head}"gone","error":${JSON.stringify({ code: 'OBJECT_NOT_FOUND', message: `no object ${id}` })}}\n`
  }
  if (entry.status === 'ready') {
    // JSON at hand goes inline; bytes, and values held on another node, are read with GET.
    const value = entry.contentType === JSON_TYPE ? backend.valueHere(id) : undefined
    return value?.kind === 'json'
      ? `${head}"ready","value":${value.text}}\n`
      : `${head}"ready","contentType":"${entry.contentType ?? BYTES_TYPE}","size":${entry.size}}\n`
  }
  const error = entry.error ?? { code: 'TASK_CANCELLED', message: `object ${id} was cancelled` }
  return `${head}${JSON.stringify(entry.status)},"error":${JSON.stringify(error)}}\n`
}

function positiveSeconds(raw: string): number {
  const value = Number(raw)
  if (!/^\d+(\.\d+)?$/.test(raw) || !(value > 0))
    throw new BadRequestError('ttlS must be a positive number of seconds')
  return value
}
