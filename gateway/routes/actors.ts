/**
 * Actors (API.md §3): make one from a deployed class, find them, call their
 * methods (with the invoke route's semantics), and kill them.
 */
import { type Context, Hono } from 'hono'
import type { ActorInfo } from '../../node/actors.ts'
import { argumentBytes } from '../../node/admission.ts'
import type { Backend } from '../../node/backend.ts'
import type { TaskArg } from '../../node/worker/messages.ts'
import { ID_HEADER, newObjectId } from '../../sdk/codec.ts'
import {
  ActorNotFoundError,
  BadRequestError,
  FunctionNotFoundError,
  NotFoundError,
} from '../../sdk/errors.ts'
import { type CallOptions, checkCallOptions } from '../../sdk/types.ts'
import { checkId, parseObject, refsOf, requireObjects, toTaskArgs } from '../http-input.ts'
import type { FunctionRegistry } from '../registry/registry.ts'
import { invokeOne } from './invoke.ts'

/** Options of an actor beside its call options: its name, and whether to get it if it exists. */
interface ActorOptions {
  name: string | undefined
  getIfExists: boolean
  options: CallOptions
  detached: boolean
}

const ACTOR_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/

function actorOptions(body: Record<string, unknown>): ActorOptions {
  const raw = body.options ?? {}
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new BadRequestError('options must be an object')
  const { getIfExists, name: optionName, ...rest } = raw as Record<string, unknown>
  const name = body.name ?? optionName
  if (name !== undefined && (typeof name !== 'string' || !ACTOR_NAME.test(name))) {
    throw new BadRequestError(
      'name must be 1 to 128 of letters, digits, _ . : and -, starting with a letter or digit',
    )
  }
  if (getIfExists !== undefined && typeof getIfExists !== 'boolean')
    throw new BadRequestError('options.getIfExists must be true or false')
  let options: CallOptions
  try {
    options = checkCallOptions(rest, 'options')
  } catch (err) {
    throw new BadRequestError((err as Error).message)
  }
  return {
    name: name as string | undefined,
    getIfExists: getIfExists === true,
    options,
    detached: options.lifetime === 'detached',
  }
}

/** The public view of an actor: its class by name, its version beside. */
function publicActor(info: ActorInfo): Record<string, unknown> {
  const [cls, version] = info.class.split('@')
  const { error, ...rest } = info
  return { ...rest, class: cls, version, ...(error ? { error } : {}) }
}

/** 404 unless `method` is a public method of the class (not its constructor, nor a name starting with _ or #). */
export function checkMethod(functions: FunctionRegistry, cls: string, method: string): void {
  const record = functions.get(cls)
  if (
    method === 'constructor' ||
    method.startsWith('_') ||
    method.startsWith('#') ||
    !record?.methods.includes(method)
  ) {
    throw new NotFoundError(
      `${cls.split('@')[0]} has no method ${JSON.stringify(method)} (its methods: ${record?.methods.join(', ') || 'none'})`,
    )
  }
}

export function actorRoutes(backend: Backend, functions: FunctionRegistry): Hono {
  const app = new Hono()
  const find = async (idOrName: string): Promise<ActorInfo> => {
    const info = await backend.actors.find(idOrName)
    if (!info) throw new ActorNotFoundError(`no actor ${idOrName}`)
    return info
  }

  app.post('/actors', async (c) => {
    const body = parseObject(await c.req.text(), '{"class", "args", "name"?, "options"?}')
    const { class: cls, args = [], ...rest } = body
    const extra = Object.keys(rest).filter((k) => k !== 'name' && k !== 'options')
    if (extra.length > 0) throw new BadRequestError(`${extra[0]} is not a known field`)
    if (typeof cls !== 'string') throw new BadRequestError('class must be the name of a deployed actor class')
    const record = functions.get(cls)
    if (!record) throw new FunctionNotFoundError(`no actor class named ${cls}`)
    if (record.kind !== 'actor') throw new BadRequestError(`${cls} is a function, not an actor class`)
    if (!Array.isArray(args)) throw new BadRequestError('args must be an array')
    const { name, getIfExists, options, detached } = actorOptions(body)
    const header = c.req.header(ID_HEADER)
    const id = header === undefined ? newObjectId() : checkId(header)
    const taskArgs: TaskArg[] = toTaskArgs(args)
    await requireObjects(backend, refsOf(taskArgs))
    if (!backend.lookup(id)) backend.admit(1, argumentBytes(taskArgs))
    const made = await backend.actors.create(
      { id, fn: record.ref, args: taskArgs, options, name, detached },
      getIfExists,
    )
    await backend.durable?.()
    return c.json({ id: made.id }, made.created ? 201 : 200)
  })

  app.get('/actors', async (c) => c.json((await backend.actors.list()).map(publicActor)))

  app.get('/actors/:id', async (c) => c.json(publicActor(await find(c.req.param('id')))))

  app.delete('/actors/:id', async (c) => {
    const info = await find(c.req.param('id'))
    if (!(await backend.actors.kill(info.id)))
      throw new ActorNotFoundError(`actor ${info.id} is dead already`)
    return c.body(null, 204)
  })

  /** A method call: as a function's invoke. */
  app.post('/actors/:id/:method', async (c: Context) => {
    const method = c.req.param('method') as string
    const info = await find(c.req.param('id') as string)
    checkMethod(functions, info.class, method)
    return invokeOne(c, backend, (call) => {
      backend.actors.call({ ...call, fn: info.class, actor: { id: info.id, method } })
    })
  })

  return app
}
