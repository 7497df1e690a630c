/**
 * The invoke route's way with one call, shared by a function's invoke and an
 * actor's method call: its id (X-Magpie-Object-Id, or a new one), its
 * arguments read and checked, admitted (a call sent again is answered as
 * the first was, however full the queues are), submitted, kept, and
 * answered: its result within `?wait=S`, else 202 with its status.
 */
import type { Context } from 'hono'
import { argumentBytes } from '../../node/admission.ts'
import type { Backend } from '../../node/backend.ts'
import { pendingResponse } from '../../node/http/responses.ts'
import type { TaskArg } from '../../node/worker/messages.ts'
import { ID_HEADER, newObjectId } from '../../sdk/codec.ts'
import type { CallOptions } from '../../sdk/types.ts'
import { checkId, readCall, refsOf, requireObjects, waitParam } from '../http-input.ts'
import { objectResponse } from '../respond.ts'

export async function invokeOne(
  c: Context,
  backend: Backend,
  submit: (call: SubmittedCall) => void,
  functionCall = false,
): Promise<Response> {
  const id = callId(c.req.header(ID_HEADER))
  const wait = waitParam(c)
  await submitCall(backend, id, await readCall(c, functionCall), submit)
  if (wait !== undefined) return objectResponse(c, id, await backend.whenSettled(id, wait * 1000), backend)
  return pendingResponse(c, id, backend.lookup(id)?.status ?? 'pending')
}

export interface SubmittedCall {
  id: string
  args: TaskArg[]
  options: CallOptions
}

/** A call's id: its X-Magpie-Object-Id header's, checked, or a new one. */
export function callId(header: string | undefined): string {
  return header === undefined ? newObjectId() : checkId(header)
}

/**
 * A call read from its request, submitted once its `$ref` arguments are
 * known to exist and the queues have room; resolves once the submission is
 * durable. Shared with the hot route's own path (fast-invoke.ts).
 */
export async function submitCall(
  backend: Backend,
  id: string,
  call: { args: TaskArg[]; options: CallOptions },
  submit: (call: SubmittedCall) => void,
): Promise<void> {
  const { args, options } = call
  await requireObjects(backend, refsOf(args))
  if (!backend.lookup(id)) backend.admit(1, argumentBytes(args))
  submit({ id, args, options })
  await backend.durable?.()
}
