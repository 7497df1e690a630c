/**
 * Reads POST /v1/objects/stream: objects as they settle, one JSON line each,
 * so that the results of many calls arrive in one request.
 */
import type { SerializedError } from './errors.ts'
import { lines, type Transport } from './transport.ts'

export type StreamedObject =
  | { id: string; status: 'ready'; value: unknown; contentType?: undefined }
  | { id: string; status: 'ready'; contentType: string; size: number }
  | { id: string; status: 'failed' | 'cancelled' | 'gone'; error: SerializedError }

/** Yields the objects of `ids` as they settle, for at most `timeoutS` seconds. */
export async function* streamObjects(
  transport: Transport,
  ids: readonly string[],
  timeoutS: number,
  parse: (line: string) => unknown,
): AsyncGenerator<StreamedObject> {
  const reply = await transport.send(
    'POST',
    '/v1/objects/stream',
    JSON.stringify({ ids, timeout: Math.round(timeoutS * 1000) / 1000 }),
    { 'content-type': 'application/json' },
  )
  for await (const line of lines(reply.chunks())) {
    if (line.length > 0) yield parse(line) as StreamedObject
  }
}
