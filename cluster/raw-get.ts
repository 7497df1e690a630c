/**
 * A GET between nodes that reads a byte body straight from the socket into
 * shared memory. HTTP clients hand a body over in chunks of their own, which
 * then have to be copied into place; here the socket reads into the object's
 * final place (net's `onread` with a caller's buffer), so that an object
 * crossing between nodes is copied once, by the kernel. Only what the nodes'
 * internal API answers is understood: a status line, headers, and a body
 * with Content-Length or chunked. Each request has a connection of its own.
 */
import { connect, type Socket } from 'node:net'

export interface RawResponse {
  status: number
  /** Header names in lower case. */
  headers: Record<string, string>
  /** The body: in shared memory when it was announced as `sharedType` with a length. */
  body: Uint8Array
}

const HEADER_LIMIT = 64 * 1024
/** How much the socket reads at a time into the body. */
const READ_BYTES = 4 * 1024 * 1024
/** A peer silent this long is taken for gone (reads wait at most 60 s for an object to finish). */
const IDLE_TIMEOUT_MS = 90_000

/**
 * GETs `url` with `headers`; a body of content type `sharedType` with a
 * Content-Length lands in a SharedArrayBuffer, any other in a plain buffer.
 */
export function rawGet(
  url: string,
  headers: Record<string, string>,
  sharedType: string,
): Promise<RawResponse> {
  const { hostname, port, pathname, search, host } = new URL(url)
  return new Promise((resolve, reject) => {
    let head = Buffer.alloc(0)
    let response: RawResponse | undefined
    /** Where the body goes once the head is read, and how much of it came. */
    let into: Uint8Array | undefined
    let received = 0
    /** A body without a known length: its pieces, joined at the end. */
    const pieces: Buffer[] = []
    let chunked = false
    const scratch = Buffer.allocUnsafe(64 * 1024)
    let done = false

    const finish = (err?: Error) => {
      if (done) return
      done = true
      socket.destroy()
      if (err) reject(err)
      else if (!response) reject(new Error(`${url}: the connection closed before a response`))
      else {
        if (!into) {
          const raw = Buffer.concat(pieces)
          response.body = chunked ? dechunk(raw) : raw
        }
        resolve(response)
      }
    }

    const onHead = (data: Buffer) => {
      head = head.byteLength === 0 ? Buffer.from(data) : Buffer.concat([head, data])
      const end = head.indexOf('\r\n\r\n')
      if (end < 0) {
        if (head.byteLength > HEADER_LIMIT) finish(new Error(`${url}: response head too large`))
        return
      }
      const lines = head.subarray(0, end).toString('latin1').split('\r\n')
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1])
      if (!Number.isInteger(status)) return finish(new Error(`${url}: not an HTTP response`))
      const fields: Record<string, string> = {}
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':')
        if (colon > 0) fields[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
      }
      response = { status, headers: fields, body: new Uint8Array(0) }
      chunked = /chunked/i.test(fields['transfer-encoding'] ?? '')
      const length = Number(fields['content-length'])
      const rest = head.subarray(end + 4)
      if (!chunked && Number.isSafeInteger(length)) {
        const shared = status === 200 && (fields['content-type'] ?? '').startsWith(sharedType)
        into = shared ? new Uint8Array(new SharedArrayBuffer(length)) : new Uint8Array(length)
        response.body = into
        onBody(rest)
      } else if (rest.byteLength > 0) {
        pieces.push(Buffer.from(rest))
      }
    }

    const onBody = (data: Uint8Array) => {
      if (!into) {
        pieces.push(Buffer.from(data))
        return
      }
      if (data !== into && data.byteLength > 0)
        into.set(data.subarray(0, into.byteLength - received), received)
      received += data.byteLength
      if (received >= into.byteLength) finish()
    }

    const socket: Socket = connect({
      host: hostname.replace(/^\[|\]$/g, ''),
      port: Number(port),
      onread: {
        // Before the head is through, reads go to scratch; then into the body's place.
        buffer: () =>
          into && received < into.byteLength
            ? into.subarray(received, Math.min(received + READ_BYTES, into.byteLength))
            : scratch,
        callback: (bytes: number, buffer: Uint8Array) => {
          if (done) return false
          if (!response) onHead(Buffer.from(buffer.buffer, buffer.byteOffset, bytes))
          else if (into && buffer !== scratch) {
            received += bytes
            if (received >= into.byteLength) finish()
          } else onBody(buffer.subarray(0, bytes))
          return true
        },
      },
    })
    socket.setTimeout(IDLE_TIMEOUT_MS, () => finish(new Error(`${url}: no answer in ${IDLE_TIMEOUT_MS} ms`)))
    socket.on('error', (err) => finish(err))
    const ended = () => {
      if (into && received < into.byteLength) finish(new Error(`${url}: the body ended early`))
      else finish()
    }
    socket.on('end', ended)
    socket.on('close', ended)
    const lines = [`GET ${pathname}${search} HTTP/1.1`, `Host: ${host}`, 'Connection: close']
    for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`)
    socket.write(`${lines.join('\r\n')}\r\n\r\n`)
  })
}

/** The body of a chunked transfer, joined. */
function dechunk(raw: Buffer): Buffer {
  const parts: Buffer[] = []
  let at = 0
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', at)
    if (lineEnd < 0) break
    const size = Number.parseInt(raw.subarray(at, lineEnd).toString('latin1'), 16)
    if (!(size > 0)) break
    parts.push(raw.subarray(lineEnd + 2, lineEnd + 2 + size))
    at = lineEnd + 2 + size + 2
  }
  return Buffer.concat(parts)
}
