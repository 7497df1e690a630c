/** Functions: list them, read one, and invoke one. */
import { Hono } from 'hono'
import { argumentBytes } from '../../node/admission.ts'
import type { Backend } from '../../node/backend.ts'
import { pendingResponse } from '../../node/http/responses.ts'
import { ID_HEADER, newObjectId } from '../../sdk/codec.ts'
import { FunctionNotFoundError } from '../../sdk/errors.ts'
import { checkBatch, checkId, parseJson, readCall, refsOf, requireObjects, waitParam } from '../http-input.ts'
import { type FunctionRegistry, publicInfo } from '../registry/registry.ts'
import { objectResponse } from '../respond.ts'

export function functionRoutes(backend: Backend, functions: FunctionRegistry): Hono {
  const app = new Hono()

  app.get('/functions', (c) => c.json(functions.list().map(publicInfo)))

  app.get('/functions/:name', (c) => {
    const record = functions.get(c.req.param('name'))
    if (!record) throw new FunctionNotFoundError(`no function named ${c.req.param('name')}`)
    return c.json(publicInfo(record))
  })

  app.post('/functions/:name/invoke', async (c) => {
    const name = c.req.param('name')
    if (!functions.get(name)) throw new FunctionNotFoundError(`no function named ${name}`)
    const header = c.req.header(ID_HEADER)
    const id = header === undefined ? newObjectId() : checkId(header)
    const wait = waitParam(c)
    const { args, options } = await readCall(c)
    await requireObjects(backend, refsOf(args))
    // A call sent again is answered as the first was, however full the queues are.
    if (!backend.lookup(id)) backend.admit(1, argumentBytes(args))
    backend.submit({ id, fn: name, args, options })
    await backend.durable?.()
    if (wait !== undefined) return objectResponse(c, id, await backend.whenSettled(id, wait * 1000), backend)
    return pendingResponse(c, id, backend.lookup(id)?.status ?? 'pending')
  })

  /** Many calls in one request: checked as a whole, then submitted in order. */
  app.post('/calls', async (c) => {
    const calls = checkBatch(parseJson(await c.req.text()), (fn) => functions.get(fn) !== undefined)
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
      backend.submit({ id: call.id, fn: call.fn, args: call.args, options: call.options })
      return { id: call.id, status: backend.lookup(call.id)?.status ?? 'pending' }
    })
    await backend.durable?.()
    return c.json(answers, 202)
  })

  return app
}
