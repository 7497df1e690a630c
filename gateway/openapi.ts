/**
 * The public routes, described once: their path parameters and queries as
 * zod schemas, which validate every request before its handler runs
 * (`validateRoutes`), and which, with the bodies' and answers' schemas, make
 * the OpenAPI document served at `GET /openapi.json`.
 */
import type { Context } from 'hono'
import { matchedRoutes } from 'hono/route'
import { z } from 'zod'
import { BadRequestError } from '../sdk/errors.ts'
import { MAX_WAIT_S } from './http-input.ts'

const ID = /^[A-Za-z0-9_-]{16,64}$/
const objectId = z
  .string()
  .regex(ID, 'bad object id: ids are 16 to 64 characters of A-Z, a-z, 0-9, _ and -')
  .describe('an object id (a call, a put, an actor)')
const functionName = z.string().min(1).describe('a function name, or name@version')
const seconds = (what: string) =>
  z
    .string()
    .regex(/^\d+(\.\d+)?$/, `${what} must be a number of seconds from 0 to ${MAX_WAIT_S}`)
    .refine((v) => Number(v) <= MAX_WAIT_S, `${what} must be a number of seconds from 0 to ${MAX_WAIT_S}`)
const flag = (name: string) =>
  z.enum(['', '0', '1', 'true', 'false'], { message: `${name} must be 1 or 0` }).optional()
const integer = (name: string, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `${name} must be an integer from 0 to ${max}`)
    .refine((v) => Number(v) <= max, `${name} must be an integer from 0 to ${max}`)
    .optional()

const wait = z.object({ wait: seconds('wait').optional() })
const callOptions = z
  .object({
    timeoutMs: z.number().int().positive(),
    maxRetries: z.number().int().min(-1),
    retryExceptions: z.union([z.boolean(), z.array(z.string())]),
    retryDelayMs: z.number().min(0),
    numCpus: z.number().min(0),
    resources: z.record(z.string(), z.number().min(0)),
    concurrency: z.number().int().positive(),
    ttlS: z.number().positive(),
    memoryMb: z.number().int().min(16),
    env: z.record(z.string(), z.string()),
    secrets: z.array(z.string()),
    maxRestarts: z.number().int().min(-1),
    maxTaskRetries: z.number().int().min(-1),
    maxConcurrency: z.number().int().positive(),
    checkpointEvery: z.union([
      z.number().int().positive(),
      z.object({ calls: z.number().int().positive(), seconds: z.number().positive() }).partial(),
    ]),
    lifetime: z.literal('detached'),
  })
  .partial()
  .describe('call options (see API.md and docs/contract-notes.md)')
const args = z.array(z.unknown()).describe('the arguments; {"$ref": id} stands for an object')
const invokeBody = z.union([args, z.object({ args: args.optional(), options: callOptions.optional() })])
const error = z.object({
  error: z.object({ code: z.string(), message: z.string(), name: z.string().optional() }).passthrough(),
})

interface RouteDoc {
  method: 'get' | 'post' | 'put' | 'delete'
  /** As Hono writes it: `/v1/objects/:id`. */
  path: string
  summary: string
  params?: z.ZodObject
  query?: z.ZodObject
  /** The body, if JSON; `bytes` for raw bytes, `text` for plain text. */
  body?: z.ZodType | 'bytes' | 'text'
  /** The answer on success, and its status. */
  answer?: { status: number; schema?: z.ZodType; type?: string }
}

const id = z.object({ id: objectId })
const name = z.object({ name: functionName })
const actor = z.object({ id: z.string().describe('an actor id, or its name') })
const secret = z.object({ name: z.string().describe('a secret name') })

export const PUBLIC_ROUTES: RouteDoc[] = [
  { method: 'get', path: '/', summary: 'the dashboard', answer: { status: 200, type: 'text/html' } },
  { method: 'get', path: '/healthz', summary: 'liveness' },
  { method: 'get', path: '/readyz', summary: 'readiness: 503 until a node can run calls' },
  {
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus metrics',
    answer: { status: 200, type: 'text/plain' },
  },
  { method: 'get', path: '/openapi.json', summary: 'this document' },
  { method: 'get', path: '/v1/nodes', summary: 'the nodes, their load and objects' },
  { method: 'get', path: '/v1/functions', summary: 'deployed functions and actor classes' },
  { method: 'get', path: '/v1/functions/:name', summary: 'one function', params: name },
  {
    method: 'put',
    path: '/v1/functions/:name',
    summary: 'deploy a bundled function (admin)',
    params: name,
    body: 'text',
    answer: { status: 201 },
  },
  { method: 'delete', path: '/v1/functions/:name', summary: 'remove a function (admin)', params: name },
  {
    method: 'post',
    path: '/v1/functions/:name/invoke',
    summary: 'call a function: 202 and its id, or its result with ?wait=S',
    params: name,
    query: wait,
    body: invokeBody,
    answer: { status: 202, schema: z.object({ id: objectId }) },
  },
  {
    method: 'post',
    path: '/v1/calls',
    summary: 'many calls at once, in order',
    body: z.object({
      calls: z.array(
        z.object({
          fn: z.string().optional(),
          actor: z.string().optional(),
          method: z.string().optional(),
          args: args.optional(),
          id: objectId.optional(),
          options: callOptions.optional(),
        }),
      ),
    }),
  },
  {
    method: 'post',
    path: '/v1/objects',
    summary: 'put an object (JSON or raw bytes)',
    query: z.object({ ttlS: z.string().optional() }),
    body: 'bytes',
    answer: { status: 201, schema: z.object({ id: objectId }) },
  },
  {
    method: 'get',
    path: '/v1/objects',
    summary: 'the biggest objects, with where they are and what holds them',
    query: z.object({
      sort: z.enum(['size'], { message: 'sort must be size' }).optional(),
      limit: integer('limit', 1000),
    }),
  },
  { method: 'get', path: '/v1/objects/:id', summary: 'an object’s value', params: id, query: wait },
  { method: 'get', path: '/v1/objects/:id/meta', summary: 'an object’s status and metadata', params: id },
  {
    method: 'get',
    path: '/v1/objects/:id/logs',
    summary: 'what a call wrote, as text',
    params: id,
    query: z.object({
      follow: flag('follow'),
      children: flag('children'),
      timestamps: flag('timestamps'),
    }),
    answer: { status: 200, type: 'text/plain' },
  },
  {
    method: 'post',
    path: '/v1/objects/:id/cancel',
    summary: 'cancel a call',
    params: id,
    body: z.object({ force: z.boolean().optional(), recursive: z.boolean().optional() }),
    answer: { status: 202 },
  },
  {
    method: 'delete',
    path: '/v1/objects/:id',
    summary: 'free an object',
    params: id,
    answer: { status: 204 },
  },
  {
    method: 'post',
    path: '/v1/wait',
    summary: 'wait until some of many objects are ready',
    body: z.object({
      ids: z.array(objectId),
      numReturns: z.number().int().min(0).optional(),
      timeout: z.number().min(0).optional(),
    }),
  },
  {
    method: 'post',
    path: '/v1/objects/stream',
    summary: 'objects as they settle, one JSON line each',
    body: z.object({ ids: z.array(objectId), timeout: z.number().min(0).optional() }),
    answer: { status: 200, type: 'application/x-ndjson' },
  },
  {
    method: 'get',
    path: '/v1/tasks',
    summary: 'the calls seen lately, newest first',
    query: z.object({
      state: z
        .enum(['queued', 'running', 'finished', 'failed', 'cancelled'], {
          message: 'state must be one of queued, running, finished, failed, cancelled',
        })
        .optional(),
      function: z.string().optional(),
      since: integer('since', Number.MAX_SAFE_INTEGER),
      limit: integer('limit', 10_000),
    }),
  },
  {
    method: 'post',
    path: '/v1/actors',
    summary: 'make an actor',
    body: z.object({
      class: z.string(),
      args: args.optional(),
      name: z.string().optional(),
      options: callOptions.extend({ getIfExists: z.boolean() }).partial().optional(),
    }),
    answer: { status: 201, schema: z.object({ id: objectId }) },
  },
  { method: 'get', path: '/v1/actors', summary: 'the actors' },
  {
    method: 'get',
    path: '/v1/actors/:id',
    summary: 'an actor, by id or name',
    params: actor,
  },
  {
    method: 'delete',
    path: '/v1/actors/:id',
    summary: 'kill an actor',
    params: actor,
    answer: { status: 204 },
  },
  {
    method: 'post',
    path: '/v1/actors/:id/:method',
    summary: 'call a method of an actor (the invoke route’s semantics)',
    params: z.object({ id: z.string(), method: z.string() }),
    query: wait,
    body: invokeBody,
    answer: { status: 202, schema: z.object({ id: objectId }) },
  },
  { method: 'get', path: '/v1/secrets', summary: 'the secrets’ names (admin)' },
  {
    method: 'put',
    path: '/v1/secrets/:name',
    summary: 'set a secret (admin)',
    params: secret,
    body: 'text',
  },
  {
    method: 'delete',
    path: '/v1/secrets/:name',
    summary: 'remove a secret (admin)',
    params: secret,
    answer: { status: 204 },
  },
]

/** `/v1/objects/:id` as OpenAPI writes it: `/v1/objects/{id}`. */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z]+)/g, '{$1}')
}

const json = (schema: z.ZodType) => z.toJSONSchema(schema, { unrepresentable: 'any' })

/** The OpenAPI 3.1 document of the public routes. */
export function openApiDocument(version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const r of PUBLIC_ROUTES) {
    const parameters = [
      ...Object.entries(r.params?.shape ?? {}).map(([n, s]) => ({
        name: n,
        in: 'path',
        required: true,
        schema: json(s as z.ZodType),
      })),
      ...Object.entries(r.query?.shape ?? {}).map(([n, s]) => ({
        name: n,
        in: 'query',
        required: false,
        schema: json(s as z.ZodType),
      })),
    ]
    const body =
      r.body === undefined
        ? undefined
        : r.body === 'bytes'
          ? { content: { 'application/octet-stream': {}, 'application/json': {} } }
          : r.body === 'text'
            ? { content: { 'text/plain': { schema: { type: 'string' } } } }
            : { content: { 'application/json': { schema: json(r.body) } } }
    const answer = r.answer ?? { status: 200 }
    paths[openApiPath(r.path)] ??= {}
    ;(paths[openApiPath(r.path)] as Record<string, unknown>)[r.method] = {
      summary: r.summary,
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(body ? { requestBody: body } : {}),
      responses: {
        [answer.status]: {
          description: 'done',
          content: {
            [answer.type ?? 'application/json']: answer.schema ? { schema: json(answer.schema) } : {},
          },
        },
        default: { description: 'an error', content: { 'application/json': { schema: json(error) } } },
      },
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: 'magpie', version },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    },
    security: [{ bearer: [] }, {}],
    paths,
  }
}

/**
 * A check of a request's path parameters and query with its route's schemas
 * (the route it matched, by method and pattern): throws a 400 naming what is
 * wrong. One lookup, not a middleware per route, which would cost every
 * request a step through Hono's middleware chain.
 */
export function routeChecker(): (c: Context, method: string, pattern: string) => void {
  const checks = new Map<string, { params?: z.ZodType; query?: z.ZodType }>()
  for (const r of PUBLIC_ROUTES) {
    if (r.params || r.query) checks.set(`${r.method.toUpperCase()} ${r.path}`, r)
  }
  return (c, method, pattern) => {
    // Hono answers HEAD with the GET route.
    const r = checks.get(`${method === 'HEAD' ? 'GET' : method} ${pattern}`)
    if (!r) return
    for (const [schema, input] of [
      [r.params, r.params && paramsOfRoute(c)],
      [r.query, r.query && c.req.query()],
    ] as const) {
      const parsed = schema?.safeParse(input)
      if (parsed && !parsed.success)
        throw new BadRequestError(parsed.error.issues[0]?.message ?? 'bad request')
    }
  }
}

/**
 * The path parameters of the route a request matched (the last of Hono's
 * matched handlers), read from a middleware before it: Hono reads them for
 * the handler at `routeIndex`, which it sets before calling each handler.
 */
function paramsOfRoute(c: Context): Record<string, string> {
  const at = c.req.routeIndex
  c.req.routeIndex = matchedRoutes(c).length - 1
  try {
    return c.req.param()
  } finally {
    c.req.routeIndex = at
  }
}
