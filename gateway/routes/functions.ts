/**
 * Functions: list them and their versions, deploy and remove them, and
 * invoke one (its latest version, or `name@version`).
 */
import { type Context, Hono, type MiddlewareHandler } from 'hono'
import { argumentBytes } from '../../node/admission.ts'
import type { Backend } from '../../node/backend.ts'
import { ActorNotFoundError, FunctionNotFoundError, PayloadTooLargeError } from '../../sdk/errors.ts'
import { checkBatch, parseJson, refsOf, requireObjects } from '../http-input.ts'
import { checkFunctionName, type FunctionRegistry, publicInfo } from '../registry/registry.ts'
import { checkMethod } from './actors.ts'
import { invokeOne } from './invoke.ts'

/** The largest bundle a deploy takes, by default. */
export const DEFAULT_MAX_BUNDLE = 16 * 1024 * 1024

export interface FunctionRoutesOptions {
  /** Guards deploys and removals (the admin token, if one is set). */
  admin: MiddlewareHandler
  /** Largest bundle in bytes (`--max-bundle`). */
  maxBundleBytes?: number | undefined
}

/** A bundle's code from a request body, refused with 413 past `max` bytes. */
async function readBundle(c: Context, max: number): Promise<string> {
  const tooBig = () => new PayloadTooLargeError(`the bundle is over the limit of ${max} bytes (--max-bundle)`)
  if (Number(c.req.header('content-length') ?? 0) > max) throw tooBig()
  const bytes = new Uint8Array(await c.req.arrayBuffer())
  if (bytes.byteLength > max) throw tooBig()
  return new TextDecoder().decode(bytes)
}

export function functionRoutes(
  backend: Backend,
  functions: FunctionRegistry,
  options: FunctionRoutesOptions,
): Hono {
  const app = new Hono()
  const maxBundle = options.maxBundleBytes ?? DEFAULT_MAX_BUNDLE
  const find = (ref: string) => {
    const record = functions.get(ref)
    if (!record) throw new FunctionNotFoundError(`no function named ${ref}`)
    return record
  }

  app.get('/functions', (c) => c.json(functions.list().map(publicInfo)))

  app.get('/functions/:name', (c) => {
    const record = find(c.req.param('name'))
    const versions = functions
      .versions(record.name)
      .map((v) => ({ version: v.version, deployedAt: v.deployedAt }))
    return c.json({ ...publicInfo(record), versions })
  })

  /** A deploy: the body is the bundle, one ES module (`magpie deploy` makes it); 201 if it is a new version. */
  app.put('/functions/:name', options.admin, async (c) => {
    const name = checkFunctionName(c.req.param('name'))
    const code = await readBundle(c, maxBundle)
    const { record, created } = await functions.deployCode(name, code)
    await backend.durable?.()
    return c.json({ ...publicInfo(record), created }, created ? 201 : 200)
  })

  app.delete('/functions/:name', options.admin, async (c) => {
    functions.remove(c.req.param('name'))
    await backend.durable?.()
    return c.body(null, 204)
  })

  app.post('/functions/:name/invoke', async (c) => {
    const record = find(c.req.param('name'))
    return invokeOne(
      c,
      backend,
      (call) => {
        backend.submit({ ...call, fn: record.ref })
      },
      true,
    )
  })

  /** Many calls in one request: checked as a whole, then submitted in order. */
  app.post('/calls', async (c) => {
    const calls = checkBatch(parseJson(await c.req.text()), (fn) => functions.get(fn)?.ref)
    // A method call runs on its actor's class: found once per actor of the batch, and its method checked.
    const classes = new Map<string, string>()
    for (const call of calls) {
      if (!call.actor) continue
      let cls = classes.get(call.actor.id)
      if (cls === undefined) {
        const info = await backend.actors.find(call.actor.id)
        if (!info) throw new ActorNotFoundError(`no actor ${call.actor.id}`)
        cls = info.class
        classes.set(call.actor.id, cls)
      }
      checkMethod(functions, cls, call.actor.method)
      call.fn = cls
    }
    // A call may take the result of an earlier call of the same batch.
    const made = new Set(calls.map((call) => call.id))
    await requireObjects(
      backend,
      calls.flatMap((call) => refsOf(call.args)).filter((id) => !made.has(id)),
    )
    const fresh = calls.filter((call) => !backend.lookup(call.id))
    backend.admit(
      fresh.length,
      fresh.reduce((bytes, call) => bytes + argumentBytes(call.args), 0),
    )
    const answers = calls.map((call) => {
      const spec = { id: call.id, fn: call.fn, args: call.args, options: call.options }
      if (call.actor) backend.actors.call({ ...spec, actor: call.actor })
      else backend.submit(spec)
      return { id: call.id, status: backend.lookup(call.id)?.status ?? 'pending' }
    })
    await backend.durable?.()
    return c.json(answers, 202)
  })

  return app
}
