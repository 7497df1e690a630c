/**
 * The one error module of magpie: stable codes, their HTTP statuses, the error
 * classes the SDK throws, and the plain form errors take to cross threads,
 * processes and HTTP. `instanceof` works across bundled copies of this module
 * (a function bundle has its own) because classes compare by brand, not identity.
 */

/** Every error code of the public contract, with the HTTP status it maps to. */
export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  FUNCTION_NOT_FOUND: 404,
  OBJECT_NOT_FOUND: 404,
  ACTOR_NOT_FOUND: 404,
  NAME_TAKEN: 409,
  TASK_CANCELLED: 409,
  OBJECT_LOST: 410,
  LOGS_GONE: 410,
  PAYLOAD_TOO_LARGE: 413,
  QUEUE_FULL: 429,
  INTERNAL: 500,
  FUNCTION_ERROR: 502,
  WORKER_CRASHED: 502,
  ACTOR_DIED: 502,
  NO_CAPACITY: 503,
  NOT_READY: 503,
  FUNCTION_TIMEOUT: 504,
  GET_TIMEOUT: 504,
  OBJECT_STORE_FULL: 507,
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

/** The plain form of an error, as it travels between threads, processes and over HTTP. */
export interface SerializedError {
  code: ErrorCode
  message: string
  name?: string
  stack?: string
  attempts?: number
  cause?: SerializedError & { id?: string }
}

/** What a function threw, as seen from outside the worker that ran it. */
export interface RemoteErrorInfo {
  name: string
  message: string
  stack?: string
}

const kKinds = Symbol.for('magpie.error.kinds')

function isCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_STATUS, value)
}

/**
 * The base of every magpie error: carries a stable `code` from {@link ERROR_STATUS}.
 * @example
 * try { await mp.get(ref) } catch (err) { if (err instanceof MagpieError) console.log(err.code) }
 */
export class MagpieError extends Error {
  static readonly kind: string = 'MagpieError'
  static readonly defaultCode: ErrorCode = 'INTERNAL'
  readonly code: ErrorCode
  attempts?: number
  declare cause?: SerializedError & { id?: string }

  constructor(
    message: string,
    options: { code?: ErrorCode; cause?: SerializedError; attempts?: number } = {},
  ) {
    super(message)
    const ctor = new.target as typeof MagpieError
    this.name = ctor.kind
    this.code = options.code ?? ctor.defaultCode
    if (options.cause !== undefined) this.cause = options.cause
    if (options.attempts !== undefined) this.attempts = options.attempts
    const kinds: string[] = []
    for (let c: unknown = ctor; typeof c === 'function' && 'kind' in c; c = Object.getPrototypeOf(c)) {
      kinds.push((c as typeof MagpieError).kind)
    }
    Object.defineProperty(this, kKinds, { value: kinds, enumerable: false })
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    if (typeof value !== 'object' || value === null) return false
    const kinds = (value as { [kKinds]?: string[] })[kKinds]
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class on the right of instanceof
    return Array.isArray(kinds) && kinds.includes(this.kind)
  }

  /** The HTTP status of this error's code. */
  get status(): number {
    return ERROR_STATUS[this.code]
  }

  toJSON(): SerializedError {
    const out: SerializedError = { code: this.code, message: this.message, name: this.name }
    if (this.attempts !== undefined) out.attempts = this.attempts
    if (this.cause !== undefined) out.cause = this.cause
    return out
  }
}

/** A function threw; `remote` holds what it threw. */
export class TaskError extends MagpieError {
  static override readonly kind: string = 'TaskError'
  static override readonly defaultCode: ErrorCode = 'FUNCTION_ERROR'
  readonly remote: RemoteErrorInfo

  constructor(
    remote: RemoteErrorInfo,
    options: { code?: ErrorCode; cause?: SerializedError; attempts?: number; message?: string } = {},
  ) {
    super(options.message ?? `${remote.name}: ${remote.message}`, options)
    this.remote = remote
  }

  override toJSON(): SerializedError {
    const out = super.toJSON()
    out.name = this.remote.name
    out.message = this.remote.message
    if (this.remote.stack !== undefined) out.stack = this.remote.stack
    return out
  }
}

export class GetTimeoutError extends MagpieError {
  static override readonly kind: string = 'GetTimeoutError'
  static override readonly defaultCode: ErrorCode = 'GET_TIMEOUT'
}
export class TaskCancelledError extends MagpieError {
  static override readonly kind: string = 'TaskCancelledError'
  static override readonly defaultCode: ErrorCode = 'TASK_CANCELLED'
}
export class ObjectLostError extends MagpieError {
  static override readonly kind: string = 'ObjectLostError'
  static override readonly defaultCode: ErrorCode = 'OBJECT_LOST'
}
export class WorkerCrashedError extends MagpieError {
  static override readonly kind: string = 'WorkerCrashedError'
  static override readonly defaultCode: ErrorCode = 'WORKER_CRASHED'
}
export class ActorDiedError extends MagpieError {
  static override readonly kind: string = 'ActorDiedError'
  static override readonly defaultCode: ErrorCode = 'ACTOR_DIED'
}
export class FunctionTimeoutError extends MagpieError {
  static override readonly kind: string = 'FunctionTimeoutError'
  static override readonly defaultCode: ErrorCode = 'FUNCTION_TIMEOUT'
}
export class BadRequestError extends MagpieError {
  static override readonly kind: string = 'BadRequestError'
  static override readonly defaultCode: ErrorCode = 'BAD_REQUEST'
}
export class NotFoundError extends MagpieError {
  static override readonly kind: string = 'NotFoundError'
  static override readonly defaultCode: ErrorCode = 'NOT_FOUND'
}
export class FunctionNotFoundError extends NotFoundError {
  static override readonly kind: string = 'FunctionNotFoundError'
  static override readonly defaultCode: ErrorCode = 'FUNCTION_NOT_FOUND'
}
export class ObjectNotFoundError extends NotFoundError {
  static override readonly kind: string = 'ObjectNotFoundError'
  static override readonly defaultCode: ErrorCode = 'OBJECT_NOT_FOUND'
}
export class ActorNotFoundError extends NotFoundError {
  static override readonly kind: string = 'ActorNotFoundError'
  static override readonly defaultCode: ErrorCode = 'ACTOR_NOT_FOUND'
}
/** A named actor exists already (create it with getIfExists to get it instead). */
export class NameTakenError extends MagpieError {
  static override readonly kind: string = 'NameTakenError'
  static override readonly defaultCode: ErrorCode = 'NAME_TAKEN'
}
export class PayloadTooLargeError extends MagpieError {
  static override readonly kind: string = 'PayloadTooLargeError'
  static override readonly defaultCode: ErrorCode = 'PAYLOAD_TOO_LARGE'
}
export class ObjectStoreFullError extends MagpieError {
  static override readonly kind: string = 'ObjectStoreFullError'
  static override readonly defaultCode: ErrorCode = 'OBJECT_STORE_FULL'
}
/** The lines a call wrote are past its node's log retention (`--log-retention`). */
export class LogsGoneError extends MagpieError {
  static override readonly kind: string = 'LogsGoneError'
  static override readonly defaultCode: ErrorCode = 'LOGS_GONE'
}
/** Too many calls wait already: try again later (the server says when, in Retry-After). */
export class QueueFullError extends MagpieError {
  static override readonly kind: string = 'QueueFullError'
  static override readonly defaultCode: ErrorCode = 'QUEUE_FULL'
}

const CLASS_BY_CODE: Partial<Record<ErrorCode, typeof MagpieError>> = {
  QUEUE_FULL: QueueFullError,
  GET_TIMEOUT: GetTimeoutError,
  TASK_CANCELLED: TaskCancelledError,
  OBJECT_LOST: ObjectLostError,
  LOGS_GONE: LogsGoneError,
  WORKER_CRASHED: WorkerCrashedError,
  ACTOR_DIED: ActorDiedError,
  FUNCTION_TIMEOUT: FunctionTimeoutError,
  BAD_REQUEST: BadRequestError,
  NOT_FOUND: NotFoundError,
  FUNCTION_NOT_FOUND: FunctionNotFoundError,
  OBJECT_NOT_FOUND: ObjectNotFoundError,
  ACTOR_NOT_FOUND: ActorNotFoundError,
  NAME_TAKEN: NameTakenError,
  PAYLOAD_TOO_LARGE: PayloadTooLargeError,
  OBJECT_STORE_FULL: ObjectStoreFullError,
}

/** Turns anything thrown into its plain form; non-magpie errors become `fallback` (what a function threw). */
export function serializeError(error: unknown, fallback: ErrorCode = 'FUNCTION_ERROR'): SerializedError {
  if (error instanceof MagpieError) {
    const out = error.toJSON()
    if (out.stack === undefined && error.stack !== undefined && error instanceof TaskError)
      out.stack = error.stack
    return out
  }
  if (error instanceof Error) {
    const out: SerializedError = { code: fallback, name: error.name, message: error.message }
    if (error.stack !== undefined) out.stack = error.stack
    return out
  }
  return { code: fallback, name: 'Error', message: describeThrown(error) }
}

function describeThrown(value: unknown): string {
  if (typeof value === 'string') return value
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** Rebuilds the error class of a plain error, so that callers can use `instanceof` and `code`. */
export function deserializeError(plain: SerializedError): MagpieError {
  const code = isCode(plain.code) ? plain.code : 'INTERNAL'
  const options = { code, cause: plain.cause, attempts: plain.attempts }
  if (code === 'FUNCTION_ERROR' || code === 'WORKER_CRASHED' || code === 'ACTOR_DIED') {
    const remote: RemoteErrorInfo = { name: plain.name ?? 'Error', message: plain.message }
    if (plain.stack !== undefined) remote.stack = plain.stack
    const err =
      code === 'FUNCTION_ERROR'
        ? new TaskError(remote, options)
        : new (CLASS_BY_CODE[code] ?? MagpieError)(`${remote.name}: ${remote.message}`, options)
    if (!(err instanceof TaskError)) Object.defineProperty(err, 'remote', { value: remote, enumerable: true })
    return err
  }
  const Ctor = CLASS_BY_CODE[code] ?? MagpieError
  return new Ctor(plain.message, options)
}

/** Reads `{"error": {...}}` bodies leniently: anything else becomes an INTERNAL error. */
export function errorFromBody(body: unknown, status: number): MagpieError {
  const inner = (body as { error?: unknown } | null)?.error as Partial<SerializedError> | undefined
  if (inner && typeof inner.message === 'string') {
    return deserializeError({
      ...inner,
      code: isCode(inner.code) ? inner.code : 'INTERNAL',
    } as SerializedError)
  }
  return new MagpieError(`unexpected HTTP ${status} from the gateway`)
}
