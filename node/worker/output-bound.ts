/**
 * What one call may write to stdout and stderr, bounded: a worker thread's
 * output passes through the node's main thread, and a call that prints
 * without end would otherwise fill the node's memory. Past the bound, the
 * call's further writes are dropped, said once with a marker line.
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

/** Bounds each call's writes to `streams` at `limit` bytes in all; `current` is the call writing now, if any. */
export function boundCallOutput(
  limit: number,
  current: () => Writer | undefined,
  streams: NodeJS.WriteStream[] = [process.stdout, process.stderr],
): void {
  for (const stream of streams) {
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean
    stream.write = ((chunk: unknown, encoding?: unknown, callback?: unknown) => {
      const call = current()
      if (call) {
        const bytes = byteLength(chunk, encoding)
        if (call.written + bytes > limit) {
          if (!call.cut) {
            call.cut = true
            write(
              `[magpie: call ${call.id} (${call.fn}) wrote more than ${limit} bytes; the rest is dropped]\n`,
            )
          }
          const done = typeof encoding === 'function' ? encoding : callback
          if (typeof done === 'function') process.nextTick(done as () => void)
          return true
        }
        call.written += bytes
      }
      return write(chunk, encoding, callback)
    }) as Write
  }
}
