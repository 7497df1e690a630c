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

/** Iterations of the loop per millisecond on this thread, measured on first use. */
export function calibrate(): number {
  const known = g[KEY]
  if (known !== undefined) return known
  let n = 20_000
  for (;;) {
    const t0 = performance.now()
    g[SINK] = spin(n)
    const dt = performance.now() - t0
    if (dt > 200) {
      g[KEY] = n / dt
      return n / dt
    }
    n *= 2
  }
}

export function burn(ms: number): number {
  const result = spin(Math.round(ms * calibrate()))
  g[SINK] = result
  return result
}
