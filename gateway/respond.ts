/** How the gateway answers with an object: its value, its error, or its status while it is unfinished. */
import type { Context } from 'hono'
import type { Backend, ObjectInfo } from '../node/backend.ts'
import { bytesResponse, errorResponse, pendingResponse } from '../node/http/responses.ts'
import { ID_HEADER, JSON_TYPE } from '../sdk/codec.ts'
import { ObjectNotFoundError } from '../sdk/errors.ts'

/** The value (200), the error, or the status (202) of an object; 404 if it is gone. */
export async function objectResponse(
  c: Context,
  id: string,
  entry: ObjectInfo | undefined,
  backend: Pick<Backend, 'readValue' | 'streamValue'>,
): Promise<Response> {
  if (!entry) throw new ObjectNotFoundError(`no object ${id}`)
  switch (entry.status) {
    case 'ready': {
      const streamed = await backend.streamValue?.(c, entry)
      if (streamed) return streamed
      const value = await backend.readValue(entry)
      if (value.kind === 'json') {
        return new Response(value.text, {
          status: 200,
          headers: { 'content-type': JSON_TYPE, [ID_HEADER]: id },
        })
      }
      return bytesResponse(c, value.bytes, { [ID_HEADER]: id })
    }
    case 'failed':
    case 'cancelled':
      return errorResponse(entry.error ?? { code: 'TASK_CANCELLED', message: `object ${id} was cancelled` }, {
        [ID_HEADER]: id,
      })
    default:
      return pendingResponse(c, id, entry.status)
  }
}
