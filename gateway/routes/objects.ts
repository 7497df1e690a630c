/** Objects: read (with long-poll), metadata, put, free, and wait on many. */
import { Hono } from 'hono'
import { newObjectId } from '../../sdk/codec.ts'
import { BadRequestError, ObjectNotFoundError } from '../../sdk/errors.ts'
import type { Backend } from '../backend.ts'
import { checkId, MAX_WAIT_S, parseJson, parseSeconds, readValue, waitParam } from '../http-input.ts'
import { ID_HEADER, objectResponse } from '../respond.ts'

export function objectRoutes(backend: Backend): Hono {
  const app = new Hono()

  app.post('/objects', async (c) => {
    const header = c.req.header(ID_HEADER)
    const id = header === undefined ? newObjectId() : checkId(header)
    const ttl = c.req.query('ttlS')
    const ttlMs = ttl === undefined ? undefined : positiveSeconds(ttl) * 1000
    const value = await readValue(c)
    backend.put(id, value, ttlMs)
    c.header('Location', `/v1/objects/${id}`)
    return c.json({ id }, 201)
  })

  app.get('/objects/:id', async (c) => {
    const id = checkId(c.req.param('id'))
    const wait = waitParam(c)
    if (!backend.lookup(id)) throw new ObjectNotFoundError(`no object ${id}`)
    const entry = wait === undefined ? backend.lookup(id) : await backend.whenSettled(id, wait * 1000)
    return objectResponse(c, id, entry)
  })

  app.get('/objects/:id/meta', (c) => {
    const id = checkId(c.req.param('id'))
    const entry = backend.lookup(id)
    if (!entry) throw new ObjectNotFoundError(`no object ${id}`)
    const node = backend.nodes()[0]?.id ?? null
    return c.json({
      id,
      status: entry.status,
      size: entry.size,
      contentType: entry.contentType,
      node,
      function: entry.function,
      attempts: entry.attempts,
      createdAt: new Date(entry.createdAt).toISOString(),
      ...(entry.error ? { error: entry.error } : {}),
    })
  })

  app.delete('/objects/:id', (c) => {
    const id = checkId(c.req.param('id'))
    if (!backend.delete(id)) throw new ObjectNotFoundError(`no object ${id}`)
    return c.body(null, 204)
  })

  app.post('/wait', async (c) => {
    const body = parseJson(await c.req.text()) as Record<string, unknown> | null
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new BadRequestError('the body must be {"ids": [...], "numReturns": 1, "timeout": S}')
    }
    const { ids, numReturns = Math.min(1, Array.isArray(ids) ? ids.length : 0), timeout } = body
    if (!Array.isArray(ids)) throw new BadRequestError('ids must be an array of object ids')
    for (const id of ids) checkId(id as string)
    if (new Set(ids).size !== ids.length) throw new BadRequestError('ids holds the same id twice')
    if (typeof numReturns !== 'number' || !Number.isInteger(numReturns) || numReturns < 0) {
      throw new BadRequestError('numReturns must be a non-negative integer')
    }
    if (numReturns > ids.length)
      throw new BadRequestError(`numReturns is ${numReturns} but only ${ids.length} ids`)
    const seconds = timeout === undefined || timeout === null ? MAX_WAIT_S : parseSeconds(timeout, 'timeout')
    for (const id of ids as string[])
      if (!backend.lookup(id)) throw new ObjectNotFoundError(`no object ${id}`)
    const ready = await backend.waitAny(ids as string[], numReturns, seconds * 1000)
    const got = new Set(ready)
    return c.json({ ready, pending: (ids as string[]).filter((id) => !got.has(id)) })
  })

  return app
}

function positiveSeconds(raw: string): number {
  const value = Number(raw)
  if (!/^\d+(\.\d+)?$/.test(raw) || !(value > 0))
    throw new BadRequestError('ttlS must be a positive number of seconds')
  return value
}
