/**
 * burn(ms): busy-loop for `ms` milliseconds of one core. The loop is a 32-bit
 * xorshift whose result is kept, calibrated once per thread (about 200 ms),
 * as the seed-pipeline workload prescribes. Every function bundle of a thread
 * shares the calibration through a global.
 */
const KEY = Symbol.for('magpie.burn.itersPerMs')
const SINK = Symbol.for('magpie.burn.sink')

type BurnGlobals = { [KEY]?: number; [SINK]?: number }
const g = globalThis as BurnGlobals

function spin(n: number): number {
  let x = 2463534242 | 0
  for (let i = 0; i < n; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
  }
  return x >>> 0
}

/**
 * Iterations of the loop per millisecond on this thread, measured on first use.
 * Node has no per-thread CPU clock, so wall time is used: the loop runs in
 * short trials for about 200 ms in all and the fastest trial counts, which is
 * the speed of a core not shared with anything else at that moment.
 */
export function calibrate(): number {
  const known = g[KEY]
  if (known !== undefined) return known
  let n = 10_000
  // Grow the trial until it takes about 10 ms, so that timer resolution does not matter.
  for (;;) {
    const t0 = performance.now()
    g[SINK] = spin(n)
    if (performance.now() - t0 > 10) break
    n *= 2
  }
  let best = Number.POSITIVE_INFINITY
  const until = performance.now() + 200
  while (performance.now() < until) {
    const t0 = performance.now()
    g[SINK] = spin(n)
    best = Math.min(best, performance.now() - t0)
  }
  g[KEY] = n / best
  return n / best
}

export function burn(ms: number): number {
  const result = spin(Math.round(ms * calibrate()))
  g[SINK] = result
  return result
}
