/** Secrets: set, list (names only) and remove; all behind the admin token, if one is set. */
import { Hono, type MiddlewareHandler } from 'hono'
import type { Backend } from '../../node/backend.ts'
import { BadRequestError } from '../../sdk/errors.ts'
import { checkSecretName, MAX_SECRET_BYTES, type SecretStore } from '../secrets.ts'

export function secretRoutes(secrets: SecretStore, backend: Backend, admin: MiddlewareHandler): Hono {
  const app = new Hono()
  app.use('/secrets', admin)
  app.use('/secrets/*', admin)

  app.get('/secrets', (c) => c.json(secrets.list()))

  /** The body is the value, as it is (text). */
  app.put('/secrets/:name', async (c) => {
    const name = checkSecretName(c.req.param('name'))
    if (Number(c.req.header('content-length') ?? 0) > MAX_SECRET_BYTES)
      throw new BadRequestError(`a secret holds at most ${MAX_SECRET_BYTES} bytes`)
    const created = secrets.set(name, await c.req.text())
    await backend.durable?.()
    const info = secrets.list().find((s) => s.name === name)
    return c.json(info, created ? 201 : 200)
  })

  app.delete('/secrets/:name', async (c) => {
    secrets.remove(c.req.param('name'))
    await backend.durable?.()
    return c.body(null, 204)
  })

  return app
}
