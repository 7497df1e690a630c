/**
 * The hot route on Node's own request and response: an invoke without
 * `?wait` (`POST /v1/functions/:name/invoke` with a JSON body of declared
 * length) is read and answered here, without Hono's Request and Response
 * objects and its middleware chain, which cost the gateway's main thread
 * about as much again as the call's own work (bench:micro, bench/README.md).
 *
 * The route keeps its contract: the body limit, then the token; the same
 * checks of the id header and the body, the same errors; 202 with
 * Location; one access line and one observation in the request histogram.
 * Whatever this path does not take goes through Hono before its body is
 * read: CORS on, bytes, a chunked body, a query, a name that is not a
 * deployed function as written (Hono then answers 404 or 400).
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Backend } from '../node/backend.ts'
import { BYTES_TYPE, ID_HEADER, JSON_TYPE } from '../sdk/codec.ts'
import { ERROR_STATUS } from '../sdk/errors.ts'
import { bearerCheck } from './auth.ts'
import { callOf } from './http-input.ts'
import type { RequestObserver } from './metrics.ts'
import type { FunctionRegistry } from './registry/registry.ts'
import { bodyTooLarge, errorOf, requestDone } from './requests.ts'
import { callId, submitCall } from './routes/invoke.ts'

/** Answers a request and says so, or says it did not take it. */
export type FastPath = (req: IncomingMessage, res: ServerResponse) => boolean

const INVOKE = /^\/v1\/functions\/([A-Za-z0-9_@.-]+)\/invoke$/
const ROUTE = '/v1/functions/:name/invoke'
const ID = ID_HEADER.toLowerCase()

export interface FastInvokeOptions {
  backend: Backend
  functions: Pick<FunctionRegistry, 'get'>
  maxBodyBytes: number
  /** The tokens a /v1 request may carry, if one is required. */
  tokens: Array<string | undefined> | undefined
  observe: RequestObserver | undefined
}

export function fastInvoke(options: FastInvokeOptions): FastPath {
  const { backend, functions, maxBodyBytes, observe } = options
  const auth = options.tokens ? bearerCheck(...options.tokens) : undefined

  async function answer(req: IncomingMessage, res: ServerResponse, fn: string, length: number) {
    const started = performance.now()
    const socket = res.socket
    const before = socket?.bytesWritten ?? 0
    let status = 202
    try {
      if (length > maxBodyBytes) throw bodyTooLarge(maxBodyBytes)
      auth?.(req.headers.authorization)
      const id = callId(req.headers[ID] as string | undefined)
      await submitCall(backend, id, callOf(await readText(req), true), (call) => {
        backend.submit({ ...call, fn })
      })
      const body = JSON.stringify({ id, status: backend.lookup(id)?.status ?? 'pending' })
      res.writeHead(202, {
        'content-type': JSON_TYPE,
        'content-length': Buffer.byteLength(body),
        location: `/v1/objects/${id}`,
      })
      res.end(body)
    } catch (err) {
      const { error, headers } = errorOf(err as Error)
      status = ERROR_STATUS[error.code] ?? 500
      if (!res.headersSent) {
        const body = JSON.stringify({ error })
        res.writeHead(status, {
          'content-type': JSON_TYPE,
          'content-length': Buffer.byteLength(body),
          ...headers,
        })
        res.end(body)
      }
    }
    requestDone(
      { method: 'POST', route: ROUTE, status, started },
      socket ? socket.bytesWritten - before : undefined,
      observe,
    )
  }

  return (req, res) => {
    if (req.method !== 'POST') return false
    const match = INVOKE.exec(req.url as string)
    const headers = req.headers
    const length = headers['content-length']
    if (!match || length === undefined || headers['transfer-encoding'] !== undefined) return false
    if ((headers['content-type'] ?? '').toLowerCase().startsWith(BYTES_TYPE)) return false
    const record = functions.get(match[1] as string)
    if (!record) return false
    void answer(req, res, record.ref, Number(length))
    return true
  }
}

/** A request's body as text (UTF-8, without a byte order mark, as Hono reads it). */
function readText(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.once('end', () => {
      const text = (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)).toString()
      resolve(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text)
    })
    req.once('error', reject)
    req.once('close', () => {
      if (!req.complete) reject(Object.assign(new Error('the client went away'), { code: 'ECONNRESET' }))
    })
  })
}
