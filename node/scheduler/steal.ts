/**
 * The stealing policy inside a node: an idle worker with an empty deque robs
 * the fullest other deque, from its back (the oldest, biggest pieces of work).
 */

/** The index of the deque to steal from, or -1 when no other deque holds work. */
export function pickVictim(lengths: readonly number[], thief: number): number {
  let victim = -1
  let most = 0
  for (let i = 0; i < lengths.length; i++) {
    const n = lengths[i] ?? 0
    if (i !== thief && n > most) {
      most = n
      victim = i
    }
  }
  return victim
}

/** Where a top-level task goes: the worker with the least queued plus running work. */
export function pickHome(queued: readonly number[], loads: readonly number[]): number {
  let best = 0
  let bestScore = Number.POSITIVE_INFINITY
  for (let i = 0; i < queued.length; i++) {
    const score = (queued[i] ?? 0) + (loads[i] ?? 0)
    if (score < bestScore) {
      bestScore = score
      best = i
    }
  }
  return best
}
