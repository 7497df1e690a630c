/** Serves a Hono app on Node's HTTP server, resolves once it listens, and closes it with its connections. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getRequestListener } from '@hono/node-server'

/**
 * Idle keep-alive connections stay open longer than clients keep them
 * (undici: 4 s), so that a client never sends on a connection the server is
 * closing at that moment (ECONNRESET).
 */
const KEEP_ALIVE_MS = 65_000

export interface Listening {
  port: number
  /** http://host:port */
  url: string
  close(): Promise<void>
}

/** A path that answers some requests on Node's own objects, before the app: true if it took the request. */
export type FirstPath = (req: IncomingMessage, res: ServerResponse) => boolean

export async function listen(
  fetch: (request: Request, env: never) => Response | Promise<Response>,
  port: number,
  host: string,
  first?: FirstPath,
): Promise<Listening> {
  const app = getRequestListener(fetch as never, { hostname: host })
  const server = createServer(first ? (req, res) => first(req, res) || void app(req, res) : app)
  server.keepAliveTimeout = KEEP_ALIVE_MS
  server.headersTimeout = KEEP_ALIVE_MS + 1000
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve)
    server.once('error', reject)
    server.listen(port, host)
  })
  const actual = (server.address() as AddressInfo).port
  let closed: Promise<void> | undefined
  return {
    port: actual,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${actual}`,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      return closed
    },
  }
}
