/**
 * The head's internal routes, for its nodes: register, heartbeat, leave,
 * report results, read the objects the head owns. Cluster secret required.
 */
import { Hono } from 'hono'
import { requireClusterSecret } from '../../node/cluster/internal-api.ts'
import type { Settled } from '../../node/cluster/node-process.ts'
import type { NodeStats } from '../../node/node.ts'
import { BadRequestError, NotFoundError } from '../../sdk/errors.ts'
import type { ClusterBackend } from '../cluster/cluster-backend.ts'
import type { NodeRegistry } from '../cluster/registry.ts'
import { checkId, requireObjects } from '../http-input.ts'
import { objectResponse } from '../respond.ts'

export function internalRoutes(registry: NodeRegistry, backend: ClusterBackend, secret: string): Hono {
  const app = new Hono()
  app.use('*', requireClusterSecret(secret))

  /**
   * An object as a node reads it (`?wait=S` waits while it is unfinished): one
   * a client made, or any other the head can find. A node reads its handles'
   * objects here when their ids do not name a node it knows.
   */
  app.get('/objects/:id', async (c) => {
    const id = checkId(c.req.param('id'))
    await requireObjects(backend, [id])
    const wait = Number(c.req.query('wait') ?? 0)
    const entry = wait > 0 ? await backend.whenSettled(id, Math.min(wait, 60) * 1000) : backend.lookup(id)
    return objectResponse(c, id, entry, backend)
  })

  app.post('/nodes', async (c) => {
    const body = (await c.req.json()) as {
      address?: unknown
      cpus?: unknown
      resources?: unknown
      id?: unknown
    }
    if (typeof body.address !== 'string' || !/^https?:\/\//.test(body.address)) {
      throw new BadRequestError('address must be an http URL')
    }
    if (!Number.isInteger(body.cpus) || (body.cpus as number) < 1)
      throw new BadRequestError('cpus must be a positive integer')
    const resources = (body.resources ?? {}) as Record<string, number>
    const node = registry.register(
      body.address,
      body.cpus as number,
      resources,
      typeof body.id === 'string' ? body.id : undefined,
    )
    return c.json({ id: node.id }, 201)
  })

  /** A heartbeat is answered with the other live nodes and their load: whom to steal from. */
  app.post('/nodes/:id/heartbeat', async (c) => {
    const id = c.req.param('id')
    if (!registry.heartbeat(id, (await c.req.json()) as NodeStats)) {
      throw new NotFoundError(`no live node ${id}: register again`)
    }
    const peers = registry
      .alive()
      .filter((n) => n.id !== id)
      .map((n) => ({ id: n.id, address: n.address, queued: n.stats.queued, cpus: n.cpus }))
    return c.json({ peers })
  })

  app.post('/nodes/:id/leave', async (c) => {
    const id = c.req.param('id')
    const node = registry.get(id)
    if (!node) throw new NotFoundError(`no node ${id}`)
    node.state = 'leaving'
    const { ids } = (await c.req.json()) as { ids?: string[] }
    backend.handBack(id, Array.isArray(ids) ? ids : [])
    return c.body(null, 204)
  })

  app.post('/settled', async (c) => {
    const { node, objects } = (await c.req.json()) as { node: string; objects: Settled[] }
    if (!Array.isArray(objects)) throw new BadRequestError('objects must be an array')
    backend.settled(node, objects)
    return c.body(null, 204)
  })

  return app
}
