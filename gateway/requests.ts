/**
 * What every request of the gateway ends with, whichever path answered it
 * (Hono's, or the hot route's own in fast-invoke.ts): its error as the
 * contract's JSON, and its log line and metric.
 */
import { HTTPException } from 'hono/http-exception'
import { RETRY_AFTER_S } from '../node/admission.ts'
import { log } from '../node/log.ts'
import { MagpieError, PayloadTooLargeError, type SerializedError, serializeError } from '../sdk/errors.ts'
import type { RequestObserver } from './metrics.ts'

/** Routes asked of often, by machines: logged at debug, not info. */
const QUIET_ROUTES = /^\/(internal\/|healthz$|readyz$|metrics$)/

export function bodyTooLarge(maxBytes: number): PayloadTooLargeError {
  return new PayloadTooLargeError(`the body is over the limit of ${maxBytes} bytes`)
}

/**
 * A request answered: its duration to `observe` (the metrics' histogram),
 * and one log line: method, route pattern (never the path's ids nor its
 * query, where a secret could be), status, duration, and bytes sent,
 * headers included.
 */
export function requestDone(
  request: { method: string; route: string; status: number; started: number },
  bytes: number | undefined,
  observe: RequestObserver | undefined,
): void {
  const { method, route, status } = request
  const seconds = (performance.now() - request.started) / 1000
  observe?.(method, route, status, seconds)
  const logger = log()
  const level = QUIET_ROUTES.test(route) ? 'debug' : 'info'
  if (!logger.isLevelEnabled(level)) return
  // One shape of object for every line (pino leaves out a field that is undefined).
  logger[level]({ method, route, status, ms: Math.round(seconds * 1e4) / 10, bytes }, 'request')
}

/** The JSON error of the contract for whatever a request threw, with its headers. */
export function errorOf(err: Error): { error: SerializedError; headers: Record<string, string> } {
  if (err instanceof MagpieError) {
    const headers: Record<string, string> =
      err.code === 'QUEUE_FULL' ? { 'retry-after': String(RETRY_AFTER_S) } : {}
    return { error: serializeError(err), headers }
  }
  if (err instanceof HTTPException) {
    const code = err.status === 401 ? 'UNAUTHORIZED' : err.status === 403 ? 'FORBIDDEN' : 'BAD_REQUEST'
    return { error: { code, message: err.message || 'bad request' }, headers: {} }
  }
  // A client that went away mid-request is nobody's error: there is no one to answer.
  if ((err as NodeJS.ErrnoException).code !== 'ECONNRESET') log().error({ err }, 'request failed')
  return { error: { code: 'INTERNAL', message: 'internal error' }, headers: {} }
}
