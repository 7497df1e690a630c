/**
 * The gateway's HTTP app: the public API of magpie under /v1, health checks,
 * and one error handler that turns every failure into the JSON error of the contract.
 */
import type { ServerResponse } from 'node:http'
import { type Context, Hono, type MiddlewareHandler, type Next } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { cors } from 'hono/cors'
import { routePath } from 'hono/route'
import type { Backend } from '../node/backend.ts'
import { errorResponse, keepSentAnswer } from '../node/http/responses.ts'
import { packageVersion } from '../node/version.ts'
import { ID_HEADER } from '../sdk/codec.ts'
import { adminToken, bearerToken } from './auth.ts'
import { type FastPath, fastInvoke } from './fast-invoke.ts'
import { createMetrics, type RequestObserver } from './metrics.ts'
import { openApiDocument, routeChecker } from './openapi.ts'
import type { FunctionRegistry } from './registry/registry.ts'
import { bodyTooLarge, errorOf, requestDone } from './requests.ts'
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
  const tooLarge = () => bodyTooLarge(maxBytes)
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
 * query (openapi.ts); then, once its answer is sent, its log line and
 * metric (`requestDone`). A check that fails is answered by `onError`, as
 * any error is, and logged the same.
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
    const done = () =>
      requestDone(
        { method: c.req.method, route, status: c.res.status, started },
        socket ? socket.bytesWritten - before : undefined,
        observe,
      )
    if (outgoing && !outgoing.writableFinished) {
      outgoing.once('close', done)
    } else done()
  }
}

/** The JSON error of the contract for whatever a request threw, as Hono's answer. */
function errorAnswer(err: Error): Response {
  const { error, headers } = errorOf(err)
  return errorResponse(error, headers)
}

export interface Gateway {
  /** Every route, on Hono. */
  app: Hono
  /** The hot route's own path, on Node's request and response (fast-invoke.ts); undefined with CORS on. */
  fast: FastPath | undefined
}

export function createGateway(options: GatewayAppOptions): Gateway {
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
  const fast = origins
    ? undefined
    : fastInvoke({
        backend: options.backend,
        functions: options.functions,
        maxBodyBytes,
        tokens: options.token ? [options.token, options.adminToken] : undefined,
        observe: metrics.observeRequest,
      })
  return { app, fast }
}
