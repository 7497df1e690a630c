/**
 * The cluster's warnings, in the platform's log (node/log.ts), each with the
 * fields that explain it. Never the cluster secret: nothing here is handed a header.
 */
import { warn } from '../node/log.ts'

export { warn }

/** A warning said at most once per `everyMs`, however often it happens: the count of the rest goes with the next. */
export function throttledWarn(everyMs: number, now: () => number = Date.now) {
  let last = Number.NEGATIVE_INFINITY
  let quiet = 0
  return (message: string, fields: Record<string, unknown> = {}) => {
    if (now() - last < everyMs) {
      quiet += 1
      return
    }
    last = now()
    warn(message, quiet > 0 ? { ...fields, 'since last said': quiet } : fields)
    quiet = 0
  }
}
