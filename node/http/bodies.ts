/**
 * Request bodies as Node's HTTP server hands them over: raw bytes read
 * straight from the socket into shared memory, or left unread for a caller
 * that streams them on. Shared by the gateway and the nodes' internal API.
 */
import type { IncomingMessage } from 'node:http'
import type { Context } from 'hono'
import { BYTES_TYPE } from '../../sdk/codec.ts'
import { BadRequestError } from '../../sdk/errors.ts'
import { toShared } from '../worker/shared-bytes.ts'

export function isBytes(c: Context): boolean {
  return (c.req.header('content-type') ?? '').toLowerCase().startsWith(BYTES_TYPE)
}

/**
 * A bytes body not read yet, as Node's server hands it over, with its
 * declared length: to be read from the socket as it comes. Undefined for
 * anything else (JSON, no length, not on Node's server).
 */
export function unreadBytes(c: Context): { body: IncomingMessage; length: number } | undefined {
  if (!isBytes(c)) return undefined
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming
  const length = Number(c.req.header('content-length'))
  if (!incoming || !Number.isSafeInteger(length) || incoming.readableEnded) return undefined
  return { body: incoming, length }
}

/**
 * A bytes body, in shared memory. On Node's server with a declared length it
 * is read straight from the socket into its final place: one copy, no
 * intermediate buffers.
 */
export async function readBytes(c: Context): Promise<Uint8Array> {
  const raw = unreadBytes(c)
  if (!raw) return toShared(new Uint8Array(await c.req.arrayBuffer()))
  const { length } = raw
  const bytes = new Uint8Array(new SharedArrayBuffer(length))
  let at = 0
  for await (const chunk of raw.body as AsyncIterable<Buffer>) {
    if (at + chunk.byteLength > length)
      throw new BadRequestError('the body is longer than its Content-Length')
    bytes.set(chunk, at)
    at += chunk.byteLength
  }
  if (at !== length) throw new BadRequestError('the body is shorter than its Content-Length')
  return bytes
}
