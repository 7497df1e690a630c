/**
 * What a call writes to stdout and stderr: captured, with the call's id, for
 * its logs (the node keeps them, and prints them prefixed with the call), and
 * bounded: a call that prints without end would otherwise fill the node's
 * memory. Past the bound, the call's further writes are dropped, said once
 * with a marker line. What is written outside any call goes out as it is.
 */

/** A call as it writes: the bytes it wrote so far, and whether it was cut off. */
export interface Writer {
  readonly id: string
  readonly fn: string
  written: number
  cut: boolean
}

type Write = NodeJS.WriteStream['write']

function byteLength(chunk: unknown, encoding: unknown): number {
  if (typeof chunk === 'string') {
    return Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
  }
  return (chunk as Uint8Array).byteLength ?? 0
}

/** Where a call's writes go: its logs. */
export type Capture = (call: Writer, stream: 'stdout' | 'stderr', text: string) => void

/**
 * Bounds each call's writes to stdout and stderr at `limit` bytes in all;
 * `current` is the call writing now, if any; `capture` takes its writes
 * (without it, they go to the stream).
 */
export function boundCallOutput(
  limit: number,
  current: () => Writer | undefined,
  capture?: Capture,
  streams: Array<[NodeJS.WriteStream, 'stdout' | 'stderr']> = [
    [process.stdout, 'stdout'],
    [process.stderr, 'stderr'],
  ],
): void {
  for (const [stream, name] of streams) {
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean
    stream.write = ((chunk: unknown, encoding?: unknown, callback?: unknown) => {
      const call = current()
      if (call) {
        const bytes = byteLength(chunk, encoding)
        if (call.written + bytes > limit) {
          if (!call.cut) {
            call.cut = true
            const marker = `[magpie: call ${call.id} (${call.fn}) wrote more than ${limit} bytes; the rest is dropped]\n`
            if (capture) capture(call, name, marker)
            else write(marker)
          }
          const done = typeof encoding === 'function' ? encoding : callback
          if (typeof done === 'function') process.nextTick(done as () => void)
          return true
        }
        call.written += bytes
        if (capture) {
          capture(call, name, typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString())
          const done = typeof encoding === 'function' ? encoding : callback
          if (typeof done === 'function') process.nextTick(done as () => void)
          return true
        }
      }
      return write(chunk, encoding, callback)
    }) as Write
  }
}
