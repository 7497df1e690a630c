/**
 * The head's internal routes, for its nodes: register, heartbeat, leave,
 * report results, and read the objects the head knows. Every body is
 * checked against the protocol; every route wants the cluster secret.
 */
import { Hono } from 'hono'
import { errorResponse } from '../../node/http/responses.ts'
import { JSON_TYPE } from '../../sdk/codec.ts'
import { BadRequestError, NotFoundError, ObjectNotFoundError } from '../../sdk/errors.ts'
import type { InternalClient } from '../client.ts'
import {
  ActorCheckpoint,
  ActorMade,
  Call,
  type FunctionCode,
  type FunctionEntry,
  fromWireArg,
  Heartbeat,
  Leave,
  Moved,
  type Peer,
  RegisterRequest,
  ROUTES,
  readBody,
  SettledReport,
  waitSeconds,
} from '../protocol.ts'
import { requireClusterSecret } from '../secret.ts'
import type { ClusterBackend } from './backend.ts'
import type { NodeRegistry } from './registry.ts'

/** The deployed functions, as the head serves them to its nodes. */
export interface HeadFunctions {
  /** Counts changes to the list. */
  readonly revision: number
  /** The latest version of every function. */
  list(): FunctionEntry[]
  /** A version's code; undefined if there is no such version. */
  code(ref: string): Promise<FunctionCode | undefined>
}

export interface HeadRoutesOptions {
  registry: NodeRegistry
  backend: ClusterBackend
  client: InternalClient
  secret: string
  functions: HeadFunctions
}

export function headRoutes({ registry, backend, client, secret, functions }: HeadRoutesOptions): Hono {
  const app = new Hono()
  app.use('/internal/*', requireClusterSecret(secret))

  /** The live nodes but one, with their load: whom to steal from, and where objects are. */
  const peersOf = (id: string): Peer[] =>
    registry
      .alive()
      .filter((n) => n.id !== id)
      .map((n) => ({
        id: n.id,
        address: n.address,
        queued: n.stats.queued,
        running: n.stats.running,
        cpus: n.cpus,
      }))

  app.post(ROUTES.register, async (c) => {
    const body = await readBody(c.req, RegisterRequest, 'register')
    const node = registry.register(body.address, body.cpus, body.resources, body.id)
    return c.json({ id: node.id, peers: peersOf(node.id), functions: functions.revision }, 201)
  })

  app.post(ROUTES.heartbeat, async (c) => {
    const id = c.req.param('id')
    if (!registry.heartbeat(id, await readBody(c.req, Heartbeat, 'heartbeat'))) {
      throw new NotFoundError(`no live node ${id}: register again`)
    }
    return c.json({ peers: peersOf(id), dead: registry.dead(), functions: functions.revision })
  })

  app.post(ROUTES.leave, async (c) => {
    const id = c.req.param('id')
    const node = registry.get(id)
    if (!node) throw new NotFoundError(`no node ${id}`)
    const { ids } = await readBody(c.req, Leave, 'leave')
    node.state = 'leaving'
    backend.handBack(ids)
    return c.body(null, 204)
  })

  app.get(ROUTES.functions, (c) => c.json({ revision: functions.revision, functions: functions.list() }))

  app.get(ROUTES.functionCode, async (c) => {
    const ref = c.req.param('id')
    const found = await functions.code(ref)
    if (!found) throw new NotFoundError(`no function version ${ref}`)
    return c.json(found)
  })

  app.post(ROUTES.actors, async (c) => {
    const body = await readBody(c.req, ActorMade, 'actor made')
    backend.adoptActor(
      {
        id: body.id,
        fn: body.class,
        args: [],
        options: body.options,
        ...(body.name ? { name: body.name } : {}),
      },
      body.node,
    )
    return c.body(null, 204)
  })

  app.get(ROUTES.actorByName, async (c) => {
    const info = await backend.actors.find(c.req.param('id'))
    if (!info || info.state === 'dead') throw new NotFoundError(`no live actor ${c.req.param('id')}`)
    return c.json({ id: info.id })
  })

  app.post(ROUTES.actorCheckpoint, async (c) => {
    const { state } = await readBody(c.req, ActorCheckpoint, 'actor checkpoint')
    backend.actorCheckpointed(c.req.param('id'), state)
    return c.body(null, 204)
  })

  app.post(ROUTES.actorCalls, async (c) => {
    const call = await readBody(c.req, Call, 'actor call')
    if (!call.actor || call.actor.method === null)
      throw new BadRequestError('an actor call names its actor and method')
    backend.actors.call({
      id: call.id,
      fn: '',
      args: call.args.map(fromWireArg),
      options: call.options,
      actor: call.actor,
    })
    return c.body(null, 204)
  })

  app.post(ROUTES.moved, async (c) => {
    backend.moved(await readBody(c.req, Moved, 'moved'))
    return c.body(null, 204)
  })

  app.post(ROUTES.settled, async (c) => {
    backend.settled(await readBody(c.req, SettledReport, 'settled report'))
    return c.body(null, 204)
  })

  /**
   * An object as a node reads it (`?wait=S` waits while it is unfinished): a
   * small value the head keeps is answered here; one held by a node is
   * redirected there, so that its bytes cross once.
   */
  app.get(ROUTES.object, async (c) => {
    const id = c.req.param('id')
    if (!backend.record(id) && !(await backend.locate(id))) throw new ObjectNotFoundError(`no object ${id}`)
    const wait = waitSeconds(c.req.query('wait'))
    const record = wait > 0 ? await backend.whenSettled(id, wait * 1000) : backend.record(id)
    if (!record) throw new ObjectNotFoundError(`no object ${id}`)
    if (record.status === 'failed' || record.status === 'cancelled') {
      return errorResponse(record.error ?? { code: 'TASK_CANCELLED', message: `object ${id} was cancelled` })
    }
    if (record.status !== 'ready') return c.json({ id, status: record.status }, 202)
    const value = backend.valueHere(id)
    if (value?.kind === 'json') return c.body(value.text, 200, { 'content-type': JSON_TYPE })
    const at = backend.addressOf(record.node)
    if (!at) return errorResponse({ code: 'OBJECT_LOST', message: `object ${id} was on a node that is gone` })
    return c.redirect(client.objectUrl(at, id, new URL(c.req.url).search), 307)
  })

  return app
}
