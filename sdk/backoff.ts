/**
 * Capped exponential backoff with jitter: how long to wait before trying
 * again, for retried calls and for messages between processes alike.
 */

export interface BackoffOptions {
  /** First delay, in ms (default 50). */
  baseMs?: number
  /** Longest delay, in ms (default 2000). */
  maxMs?: number
  /** In [0, 1), injectable for tests (default Math.random). */
  random?: () => number
}

/** The `attempt`th delay (from 0): doubling from baseMs up to maxMs, each drawn in its upper half at random. */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  const base = options.baseMs ?? 50
  const max = options.maxMs ?? 2000
  const ceiling = Math.min(max, base * 2 ** Math.min(attempt, 30))
  return Math.round(ceiling / 2 + (ceiling / 2) * (options.random ?? Math.random)())
}
