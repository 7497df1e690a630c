/**
 * Checks what clients send, once, at the edge: object ids, `?wait=`, call
 * bodies and `$ref` arguments. Everything past here trusts its input.
 */
import type { Context } from 'hono'
import type { Backend } from '../node/backend.ts'
import { isBytes, readBytes } from '../node/http/bodies.ts'
import type { TaskArg } from '../node/worker/messages.ts'
import { type EncodedValue, isObjectId, newObjectId, refIdOf } from '../sdk/codec.ts'
import { BadRequestError, FunctionNotFoundError, ObjectNotFoundError } from '../sdk/errors.ts'
import { type CallOptions, checkCallOptions, refuseActorOptions } from '../sdk/types.ts'

export const MAX_WAIT_S = 60

export function checkId(id: unknown, what = 'object id'): string {
  if (!isObjectId(id))
    throw new BadRequestError(`bad ${what}: ids are 16 to 64 characters of A-Z, a-z, 0-9, _ and -`)
  return id
}

/** Seconds to wait from a `?wait=` or `timeout` value: 0 to 60, fractions allowed. */
export function parseSeconds(raw: unknown, what: string): number {
  const value = typeof raw === 'string' && /^\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw) : raw
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_WAIT_S) {
    throw new BadRequestError(`${what} must be a number of seconds from 0 to ${MAX_WAIT_S}`)
  }
  return value
}

export function waitParam(c: Context): number | undefined {
  const raw = c.req.query('wait')
  return raw === undefined ? undefined : parseSeconds(raw, 'wait')
}

/** A JSON body that must be an object (not an array, not null): 400 with `shape` otherwise. */
export function parseObject(text: string, shape: string): Record<string, unknown> {
  const body: unknown = parseJson(text)
  if (!isRecord(body)) throw new BadRequestError(`the body must be ${shape}`)
  return body
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The request body as text or bytes (the size limit is enforced before this runs). */
export async function readValue(c: Context): Promise<EncodedValue> {
  if (isBytes(c)) return { kind: 'bytes', bytes: await readBytes(c) }
  const text = await c.req.text()
  parseJson(text)
  return { kind: 'json', text }
}

/** How deeply JSON bodies may nest: deeper values would overflow the stack of whatever walks them. */
export const MAX_JSON_DEPTH = 512

export function parseJson(text: string): unknown {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw new BadRequestError(`malformed JSON: ${(err as Error).message}`)
  }
  if (nestingOver(text, MAX_JSON_DEPTH)) {
    throw new BadRequestError(`JSON nested more than ${MAX_JSON_DEPTH} levels deep`)
  }
  return value
}

/** Whether JSON text (already known valid) nests arrays and objects more than `max` deep. */
function nestingOver(text: string, max: number): boolean {
  // A text no longer than the limit cannot nest deeper: most bodies skip the scan.
  if (text.length <= max) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i)
    if (inString) {
      if (ch === 0x5c)
        i++ // backslash: skip the escaped character
      else if (ch === 0x22) inString = false
    } else if (ch === 0x22) inString = true
    else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > max) return true
    } else if (ch === 0x5d || ch === 0x7d) depth--
  }
  return false
}

/** Arguments and options of a call: a JSON array, `{"args": [...], "options": {...}}`, or raw bytes. */
export async function readCall(
  c: Context,
  functionCall = false,
): Promise<{ args: TaskArg[]; options: CallOptions }> {
  if (isBytes(c)) {
    return {
      args: [{ kind: 'bytes', bytes: await readBytes(c) }],
      options: {},
    }
  }
  return callOf(await c.req.text(), functionCall)
}

/** A call's arguments and options from its JSON body (an empty body is no arguments). */
export function callOf(text: string, functionCall = false): { args: TaskArg[]; options: CallOptions } {
  const body = text.trim() === '' ? [] : parseJson(text)
  let args: unknown[]
  let options: CallOptions = {}
  if (Array.isArray(body)) {
    args = body
  } else if (isEnvelope(body)) {
    args = body.args
    try {
      options = checkCallOptions(body.options)
      if (functionCall) refuseActorOptions(options)
    } catch (err) {
      throw new BadRequestError((err as Error).message)
    }
  } else {
    throw new BadRequestError(
      'the body must be a JSON array of arguments, or {"args": [...], "options": {...}}',
    )
  }
  return { args: args.map(toTaskArg), options }
}

function isEnvelope(body: unknown): body is { args: unknown[]; options?: unknown } {
  if (typeof body !== 'object' || body === null) return false
  const keys = Object.keys(body)
  return (
    Array.isArray((body as { args?: unknown }).args) && keys.every((k) => k === 'args' || k === 'options')
  )
}

/** One call of a batch, checked: `{"function", "args", "options"?, "id"?}`. */
export interface BatchCall {
  fn: string
  id: string
  args: TaskArg[]
  options: CallOptions
  /** A method call of an actor (fn is then found from the actor). */
  actor?: { id: string; method: string }
}

/** Most calls one batch may carry. */
export const MAX_BATCH = 10_000

/**
 * Checks a batch of calls as a whole before any of it runs: every function
 * known (`resolve` gives the version it runs, `name@version`), every id well
 * formed and unique, every `$ref` existing already or made by an earlier
 * call of the same batch.
 */
export function checkBatch(body: unknown, resolve: (fn: string) => string | undefined) {
  if (!Array.isArray(body)) throw new BadRequestError('the body must be a JSON array of calls')
  if (body.length > MAX_BATCH) throw new BadRequestError(`a batch holds at most ${MAX_BATCH} calls`)
  const made = new Set<string>()
  return body.map((call, i): BatchCall => {
    const where = `calls[${i}]`
    if (typeof call !== 'object' || call === null || Array.isArray(call)) {
      throw new BadRequestError(`${where} must be {"function", "args", "options"?, "id"?}`)
    }
    const { function: fn, actor, method, args, options, id: rawId, ...rest } = call as Record<string, unknown>
    const extra = Object.keys(rest)
    if (extra.length > 0) throw new BadRequestError(`${where}.${extra[0]} is not a known field`)
    let ref: string | undefined
    let target: BatchCall['actor']
    if (actor !== undefined) {
      // A method call of an actor: its class is found by the route.
      if (fn !== undefined)
        throw new BadRequestError(`${where} names a function and an actor: one or the other`)
      if (typeof method !== 'string' || method === '')
        throw new BadRequestError(`${where}.method must be a method name`)
      target = { id: checkId(actor, 'actor id'), method }
      ref = ''
    } else {
      if (typeof fn !== 'string') throw new BadRequestError(`${where}.function must be a function name`)
      ref = resolve(fn)
      if (ref === undefined) throw new FunctionNotFoundError(`no function named ${fn}`)
    }
    if (!Array.isArray(args)) throw new BadRequestError(`${where}.args must be an array`)
    const id = rawId === undefined ? newObjectId() : checkId(rawId)
    if (made.has(id)) throw new BadRequestError(`${where}.id repeats an id of the same batch`)
    let checked: CallOptions
    try {
      checked = checkCallOptions(options, `${where}.options`)
      if (!target) refuseActorOptions(checked, `${where}.options`)
    } catch (err) {
      throw new BadRequestError((err as Error).message)
    }
    const call_: BatchCall = {
      ...(target ? { actor: target } : {}),
      fn: ref,
      id,
      args: args.map(toTaskArg),
      options: checked,
    }
    made.add(id)
    return call_
  })
}

/** Arguments as JSON gives them: each a value, or `{"$ref": id}` for an object. */
export function toTaskArgs(args: readonly unknown[]): TaskArg[] {
  return args.map(toTaskArg)
}

function toTaskArg(arg: unknown): TaskArg {
  const ref = refIdOf(arg)
  if (ref === undefined) return { kind: 'json', text: JSON.stringify(arg) }
  return { kind: 'ref', id: checkId(ref, '$ref id') }
}

/** The ids of the top-level `$ref` arguments of calls. */
export function refsOf(args: readonly TaskArg[]): string[] {
  return args.flatMap((a) => (a.kind === 'ref' ? [a.id] : []))
}

/** 404 for the first id that no object has, wherever objects live. */
export async function requireObjects(backend: Pick<Backend, 'lookup' | 'locate'>, ids: Iterable<string>) {
  for (const id of ids) {
    if (!backend.lookup(id) && !(await backend.locate(id))) throw new ObjectNotFoundError(`no object ${id}`)
  }
}
