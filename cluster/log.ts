/**
 * The cluster's warnings: one line each on stderr, with the fields that
 * explain it. Never the cluster secret: nothing here is handed a header.
 */

/** Writes one warning line: `magpie: message (key=value, ...)`. */
export function warn(message: string, fields: Record<string, unknown> = {}): void {
  const parts = Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${value instanceof Error ? value.message : String(value)}`)
  console.error(`magpie: ${message}${parts.length > 0 ? ` (${parts.join(', ')})` : ''}`)
}

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
