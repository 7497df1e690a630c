/**
 * The gateway's HTTP app: the public API of magpie under /v1, health checks,
 * and one error handler that turns every failure into the JSON error of the contract.
 */
import type { ServerResponse } from 'node:http'
import { type Context, Hono, type MiddlewareHandler, type Next } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { cors } from 'hono/cors'
import { HTTPException } from 'hono/http-exception'
import { routePath } from 'hono/route'
import { RETRY_AFTER_S } from '../node/admission.ts'
import type { Backend } from '../node/backend.ts'
import { errorResponse, keepSentAnswer } from '../node/http/responses.ts'
import { log } from '../node/log.ts'
import { packageVersion } from '../node/version.ts'
import { ID_HEADER } from '../sdk/codec.ts'
import { MagpieError, PayloadTooLargeError, serializeError } from '../sdk/errors.ts'
import { adminToken, bearerToken } from './auth.ts'
import { createMetrics, type RequestObserver } from './metrics.ts'
import { openApiDocument, routeChecker } from './openapi.ts'
import type { FunctionRegistry } from './registry/registry.ts'
import { actorRoutes } from './routes/actors.ts'
import { dashboardRoutes } from './routes/dashboard.ts'
import { functionRoutes } from './routes/functions.ts'
import { healthRoutes } from './routes/health.ts'
import { logRoutes } from './routes/logs.ts'
import { objectRoutes } from './routes/objects.ts'
import { secretRoutes } from './routes/secrets.ts'
import { taskRoutes } from './routes/tasks.ts'
import type { SecretStore } from './secrets.ts'

export interface GatewayAppOptions {
  backend: Backend
  functions: FunctionRegistry
  secrets: SecretStore
  /** Largest request body in bytes (default 64 MiB). */
  maxBodyBytes?: number
  /** Token every /v1 call must carry, if set. */
  token?: string | undefined
  /** Token deploys, removals and secrets must carry, if set (it is taken wherever the token is). */
  adminToken?: string | undefined
  /** Largest bundle a deploy takes, in bytes (default 16 MiB). */
  maxBundleBytes?: number | undefined
  /** Serve /metrics without the token (for a scraper inside a trusted network). */
  metricsPublic?: boolean | undefined
  /** Origins whose pages may call the API (CORS), `*` for any. */
  cors?: readonly string[] | undefined
  /** The head's routes for its nodes (under /internal, behind the cluster secret). */
  internal?: Hono | undefined
}

export const DEFAULT_MAX_BODY = 64 * 1024 * 1024

/**
 * 413 for bodies over the limit. A declared Content-Length is checked at once
 * (Node's parser holds the body to it); only chunked bodies are counted as
 * they stream, by Hono's bodyLimit, which costs a stream wrapper per request.
 */
function bodyLimiter(maxBytes: number): (c: Context, next: Next) => Promise<void> {
  const tooLarge = () => new PayloadTooLargeError(`the body is over the limit of ${maxBytes} bytes`)
  const chunked = bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw tooLarge()
    },
  })
  return async (c, next) => {
    const length = c.req.header('content-length')
    if (length !== undefined) {
      if (Number(length) > maxBytes) throw tooLarge()
      return next()
    }
    if (c.req.header('transfer-encoding') === undefined) return next()
    await chunked(c, next)
  }
}

/** Routes asked of often, by machines: logged at debug, not info. */
const QUIET_ROUTES = /^\/(internal\/|healthz$|readyz$|metrics$)/

interface EveryRequestOptions {
  maxBodyBytes: number
  /** Answers what a check threw, as the app's error handler does. */
  onError(err: Error): Response
  observe?: RequestObserver | undefined
  /** Hono's CORS middleware, when pages of other origins may call: before the token (a preflight carries none). */
  cors?: MiddlewareHandler | undefined
  /** The token's guard of /v1. */
  auth?: MiddlewareHandler | undefined
}

/**
 * What every request goes through, in one step of Hono's chain (each step
 * costs a request some microseconds), in this order: CORS, the body limit
 * and the token under /v1, the check of its route's path parameters and
 * query (openapi.ts); then, once its answer is sent, one log line (method,
 * route pattern, never the path's ids nor its query, where a secret could
 * be; status, duration, and bytes sent, headers included) and its duration
 * to `observe` (the metrics' histogram). A check that fails is answered by
 * `onError`, as any error is, and logged the same.
 */
function everyRequest(options: EveryRequestOptions): MiddlewareHandler {
  const { onError, observe, cors, auth } = options
  const limitBody = bodyLimiter(options.maxBodyBytes)
  const checkRoute = routeChecker()
  return async function gatewayRequest(c, next) {
    const started = performance.now()
    const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing
    const socket = outgoing?.socket
    const before = socket?.bytesWritten ?? 0
    const route = routePath(c, -1)
    const v1 = c.req.path.startsWith('/v1/')
    const checked = async () => {
      checkRoute(c, c.req.method, route)
      await next()
    }
    const guarded = v1 && auth ? async () => void (await auth(c, checked)) : checked
    const handled = async () => {
      try {
        await (v1 ? limitBody(c, guarded) : guarded())
      } catch (err) {
        c.res = onError(err as Error)
      }
    }
    if (cors) {
      // A preflight is answered here, without going on; other answers get their headers, errors too.
      const answer = await cors(c, handled)
      if (answer) c.res = answer
      keepSentAnswer(c)
    } else await handled()
    const done = () => {
      const seconds = (performance.now() - started) / 1000
      const status = c.res.status
      observe?.(c.req.method, route, status, seconds)
      const logger = log()
      const level = QUIET_ROUTES.test(route) ? 'debug' : 'info'
      if (!logger.isLevelEnabled(level)) return
      const fields = { method: c.req.method, route, status, ms: Math.round(seconds * 1e4) / 10 }
      logger[level](socket ? { ...fields, bytes: socket.bytesWritten - before } : fields, 'request')
    }
    if (outgoing && !outgoing.writableFinished) {
      outgoing.once('close', done)
    } else done()
  }
}

/** The JSON error of the contract for whatever a request threw. */
function errorAnswer(err: Error): Response {
  if (err instanceof MagpieError) {
    const headers: Record<string, string> =
      err.code === 'QUEUE_FULL' ? { 'retry-after': String(RETRY_AFTER_S) } : {}
    return errorResponse(serializeError(err), headers)
  }
  if (err instanceof HTTPException) {
    const code = err.status === 401 ? 'UNAUTHORIZED' : err.status === 403 ? 'FORBIDDEN' : 'BAD_REQUEST'
    return errorResponse({ code, message: err.message || 'bad request' })
  }
  // A client that went away mid-request is nobody's error: there is no one to answer.
  if ((err as NodeJS.ErrnoException).code !== 'ECONNRESET') log().error({ err }, 'request failed')
  return errorResponse({ code: 'INTERNAL', message: 'internal error' })
}

export function createGatewayApp(options: GatewayAppOptions): Hono {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY
  const app = new Hono()

  const metrics = createMetrics(options.backend)
  const origins = options.cors && options.cors.length > 0 ? [...options.cors] : undefined
  app.use(
    '*',
    everyRequest({
      maxBodyBytes,
      onError: errorAnswer,
      observe: metrics.observeRequest,
      cors: origins
        ? cors({
            origin: origins.includes('*') ? '*' : origins,
            allowMethods: ['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS'],
            allowHeaders: ['Authorization', 'Content-Type', ID_HEADER],
            exposeHeaders: [ID_HEADER, 'Location', 'Retry-After'],
            maxAge: 600,
          })
        : undefined,
      auth: options.token ? bearerToken(options.token, options.adminToken) : undefined,
    }),
  )
  if (options.token && !options.metricsPublic) app.use('/metrics', bearerToken(options.token))

  app.get('/openapi.json', (c) => c.json(openApiDocument(packageVersion())))
  if (options.internal) app.route('/', options.internal)
  app.route('/', healthRoutes(options.backend, metrics))
  app.route('/', dashboardRoutes())
  app.route(
    '/v1',
    functionRoutes(options.backend, options.functions, {
      admin: adminToken(options.adminToken),
      maxBundleBytes: options.maxBundleBytes,
    }),
  )
  app.route('/v1', objectRoutes(options.backend))
  app.route('/v1', logRoutes(options.backend))
  app.route('/v1', taskRoutes(options.backend))
  app.route('/v1', actorRoutes(options.backend, options.functions))
  app.route('/v1', secretRoutes(options.secrets, options.backend, adminToken(options.adminToken)))

  app.notFound((c) => errorResponse({ code: 'NOT_FOUND', message: `no route ${c.req.method} ${c.req.path}` }))
  app.onError(errorAnswer)
  return app
}
