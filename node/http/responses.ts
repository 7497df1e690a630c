/**
 * Responses with values as they are stored: bytes written to Node's socket
 * without a copy, files and peer bodies streamed with backpressure, and
 * errors as the contract's JSON. Shared by the gateway and the nodes' internal API.
 */
import { createReadStream } from 'node:fs'
import { ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response'
import type { Context } from 'hono'
import { BYTES_TYPE, JSON_TYPE } from '../../sdk/codec.ts'
import { ERROR_STATUS, type SerializedError } from '../../sdk/errors.ts'
import type { SpilledFile } from '../store/spill.ts'

/** Shared memory is copied into a response this many bytes at a time. */
const CHUNK_BYTES = 1024 * 1024
/** Values on disk at least this big are streamed from their file rather than read in first. */
export const STREAM_FROM_DISK_BYTES = 1024 * 1024

/** Node's response object, when the request came through Node's server and nothing was sent yet. */
function socketResponse(c: Context | undefined): ServerResponse | undefined {
  // A HEAD answer goes the usual way, so that the server leaves out its body.
  if (c?.req.method === 'HEAD') return undefined
  const outgoing = (c?.env as { outgoing?: unknown } | undefined)?.outgoing
  return outgoing instanceof ServerResponse && !outgoing.headersSent ? outgoing : undefined
}

/**
 * Headers for an answer written straight to the socket: those middleware set
 * on the context (CORS's, for one), then the answer's own. The context's
 * answer becomes RESPONSE_ALREADY_SENT at once (set after `undefined`, so
 * that Hono does not merge the two into a new response, which
 * @hono/node-server would try to write again).
 */
function withContextHeaders(c: Context, headers: Record<string, string>): Record<string, string> {
  const all: Record<string, string> = {}
  c.res.headers.forEach((value, key) => {
    all[key] = value
  })
  markSent(c)
  return Object.assign(all, headers)
}

/** Makes the context's answer RESPONSE_ALREADY_SENT itself, set after `undefined` so that Hono merges nothing into it. */
function markSent(c: Context): void {
  c.res = undefined as unknown as Response
  c.res = RESPONSE_ALREADY_SENT
}

/**
 * After every middleware has had its say: an answer a handler wrote straight
 * to the socket stays RESPONSE_ALREADY_SENT, whatever a middleware did to the
 * context's response after it (Hono's CORS adds a Vary header, which makes
 * a new response that @hono/node-server would write again).
 */
export function keepSentAnswer(c: Context): void {
  const outgoing = (c.env as { outgoing?: unknown } | undefined)?.outgoing
  if (!(outgoing instanceof ServerResponse) || !outgoing.headersSent) return
  markSent(c)
}

/** A response with bytes streamed from part of an open file, which it closes. */
export function fileResponse(
  c: Context | undefined,
  file: SpilledFile,
  headers: Record<string, string> = {},
): Response {
  const stream = createReadStream('', {
    fd: file.fd,
    start: file.offset,
    end: file.offset + file.length - 1,
    highWaterMark: CHUNK_BYTES,
  })
  return streamResponse(c, stream, {
    'content-type': file.kind === 'json' ? JSON_TYPE : BYTES_TYPE,
    'content-length': String(file.length),
    ...headers,
  })
}

/** A 200 whose body is `stream`, written to Node's socket as it comes (with backpressure) where there is one. */
export function streamResponse(
  c: Context | undefined,
  stream: Readable,
  headers: Record<string, string>,
): Response {
  const outgoing = socketResponse(c)
  if (outgoing && c) {
    outgoing.writeHead(200, withContextHeaders(c, headers))
    stream.pipe(outgoing)
    stream.on('error', () => outgoing.destroy())
    outgoing.on('close', () => stream.destroy())
    return RESPONSE_ALREADY_SENT
  }
  return new Response(Readable.toWeb(stream) as ReadableStream<Uint8Array>, { headers })
}

/**
 * A response with raw bytes. On Node's HTTP server they are written to the
 * socket straight from where they are stored, shared memory included: no
 * copy. Elsewhere (a Response body cannot be shared memory) big shared values
 * are streamed out a chunk at a time, so that answering never holds a second
 * whole copy of them.
 */
export function bytesResponse(
  c: Context | undefined,
  bytes: Uint8Array,
  headers: Record<string, string> = {},
): Response {
  const all = { 'content-type': BYTES_TYPE, 'content-length': String(bytes.byteLength), ...headers }
  const outgoing = socketResponse(c)
  if (outgoing && c) {
    outgoing.writeHead(200, withContextHeaders(c, all))
    outgoing.end(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
    return RESPONSE_ALREADY_SENT
  }
  if (!(bytes.buffer instanceof SharedArrayBuffer))
    return new Response(bytes as Uint8Array<ArrayBuffer>, { headers: all })
  if (bytes.byteLength <= CHUNK_BYTES) return new Response(new Uint8Array(bytes), { headers: all })
  let offset = 0
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const end = Math.min(offset + CHUNK_BYTES, bytes.byteLength)
      controller.enqueue(bytes.slice(offset, end))
      offset = end
      if (offset === bytes.byteLength) controller.close()
    },
  })
  return new Response(body, { headers: all })
}

/** Where lines of a streamed answer go (linesResponse). */
export interface LineSink {
  /** Queues text (whole lines) to be sent with what else comes soon. */
  write(text: string): void
  /** Resolves when the client goes away before the end. */
  readonly aborted: Promise<void>
}

/** How long a stream's text may wait to go with what follows: a hundredth of the time it has been open, within these bounds (ms). */
const GATHER_SHARE = 0.01
const GATHER_MIN_MS = 2
const GATHER_MAX_MS = 50

/**
 * A 200 whose body is text written by `run` as it comes, ended when `run`
 * returns. Text written close together goes out in one write: the first at
 * once, then at most one write per window, a hundredth of the time the
 * stream has been open (2 to 50 ms), so that a stream of many small results
 * costs the server and its client a write and a read per few lines, not per
 * line (each write to a socket costs the sender tens of microseconds of
 * system time), and what waits for the last lines waits at most 1% longer.
 * On Node's server it is written to the socket directly, without the web
 * streams a Response body goes through.
 */
export function linesResponse(
  c: Context,
  headers: Record<string, string>,
  run: (out: LineSink) => Promise<void>,
): Response {
  const opened = performance.now()
  let pending: string[] = []
  let lastWrite = Number.NEGATIVE_INFINITY
  let timer: ReturnType<typeof setTimeout> | undefined
  let immediate: ReturnType<typeof setImmediate> | undefined
  let emit: (text: string) => void = () => {}
  let abort = () => {}
  const aborted = new Promise<void>((resolve) => {
    abort = resolve
  })
  const flush = () => {
    timer = undefined
    immediate = undefined
    if (pending.length === 0) return
    lastWrite = performance.now()
    const text = pending.length === 1 ? (pending[0] as string) : pending.join('')
    pending = []
    emit(text)
  }
  const sink: LineSink = {
    aborted,
    write(text) {
      pending.push(text)
      if (timer !== undefined || immediate !== undefined) return
      const now = performance.now()
      const gatherMs = Math.min(GATHER_MAX_MS, Math.max(GATHER_MIN_MS, (now - opened) * GATHER_SHARE))
      const wait = lastWrite + gatherMs - now
      if (wait <= 0) immediate = setImmediate(flush)
      else timer = setTimeout(flush, wait)
    },
  }
  const finish = () => {
    clearTimeout(timer)
    clearImmediate(immediate)
    flush()
  }
  const outgoing = socketResponse(c)
  if (outgoing) {
    outgoing.writeHead(200, withContextHeaders(c, headers))
    emit = (text) => {
      outgoing.write(text)
    }
    outgoing.on('close', () => abort())
    run(sink).then(
      () => {
        finish()
        outgoing.end()
      },
      () => outgoing.destroy(),
    )
    return RESPONSE_ALREADY_SENT
  }
  const encoder = new TextEncoder()
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      emit = (text) => controller.enqueue(encoder.encode(text))
      run(sink).then(
        () => {
          finish()
          controller.close()
        },
        (err: unknown) => controller.error(err),
      )
    },
    cancel() {
      abort()
    },
  })
  return new Response(body, { headers })
}

export function errorResponse(error: SerializedError, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ error }), {
    status: ERROR_STATUS[error.code] ?? 500,
    headers: { 'content-type': JSON_TYPE, ...headers },
  })
}

/** 202 with the object's status, and where to poll it. */
export function pendingResponse(c: Context, id: string, status: string): Response {
  c.header('Location', `/v1/objects/${id}`)
  return c.json({ id, status }, 202)
}
