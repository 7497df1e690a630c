/**
 * The gateway's HTTP app: the public API of magpie under /v1, health checks,
 * and one error handler that turns every failure into the JSON error of the contract.
 */
import { Hono } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { HTTPException } from 'hono/http-exception'
import { MagpieError, PayloadTooLargeError, serializeError } from '../sdk/errors.ts'
import { bearerToken } from './auth.ts'
import type { Backend } from './backend.ts'
import type { FunctionRegistry } from './registry/registry.ts'
import { errorResponse } from './respond.ts'
import { functionRoutes } from './routes/functions.ts'
import { healthRoutes } from './routes/health.ts'
import { objectRoutes } from './routes/objects.ts'

export interface GatewayAppOptions {
  backend: Backend
  functions: FunctionRegistry
  /** Largest request body in bytes (default 64 MiB). */
  maxBodyBytes?: number
  /** Token every /v1 call must carry, if set. */
  token?: string | undefined
}

export const DEFAULT_MAX_BODY = 64 * 1024 * 1024

export function createGatewayApp(options: GatewayAppOptions): Hono {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY
  const app = new Hono()

  app.use(
    '/v1/*',
    bodyLimit({
      maxSize: maxBodyBytes,
      onError: () => {
        throw new PayloadTooLargeError(`the body is over the limit of ${maxBodyBytes} bytes`)
      },
    }),
  )
  if (options.token) app.use('/v1/*', bearerToken(options.token))

  app.route('/', healthRoutes(options.backend))
  app.route('/v1', functionRoutes(options.backend, options.functions))
  app.route('/v1', objectRoutes(options.backend))

  app.notFound((c) => errorResponse({ code: 'NOT_FOUND', message: `no route ${c.req.method} ${c.req.path}` }))
  app.onError(function magpieErrorHandler(err) {
    if (err instanceof MagpieError) return errorResponse(serializeError(err))
    if (err instanceof HTTPException) {
      const code = err.status === 401 ? 'UNAUTHORIZED' : err.status === 403 ? 'FORBIDDEN' : 'BAD_REQUEST'
      return errorResponse({ code, message: err.message || 'bad request' })
    }
    console.error(err)
    return errorResponse({ code: 'INTERNAL', message: 'internal error' })
  })
  return app
}
