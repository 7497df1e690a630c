/**
 * burn(ms): busy-loop for `ms` milliseconds of one core. The loop is a 32-bit
 * xorshift whose result is kept, calibrated once per thread (about 200 ms),
 * as the seed-pipeline workload prescribes. Every function bundle of a thread
 * shares the calibration through a global.
 */
import { readFileSync } from 'node:fs'

const KEY = Symbol.for('magpie.burn.itersPerMs')
const SINK = Symbol.for('magpie.burn.sink')
const SPIN = Symbol.for('magpie.burn.spin')

type BurnGlobals = { [KEY]?: number; [SINK]?: number; [SPIN]?: (n: number) => number }
const g = globalThis as BurnGlobals

function xorshift(n: number): number {
  let x = 2463534242 | 0
  for (let i = 0; i < n; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
  }
  return x >>> 0
}

// One loop per thread, shared by every bundle: separately compiled copies of
// the same loop can run at different speeds, and only one is calibrated.
g[SPIN] ??= xorshift
const spin = g[SPIN]

/** CPU time of the calling thread in ms, where Linux tells it (/proc/thread-self/schedstat), else undefined. */
function threadCpuMs(): number | undefined {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6
  } catch {
    return undefined
  }
}

/**
 * Iterations of the loop per millisecond on this thread, measured on first use
 * as the workload prescribes: one run of about 200 ms, timed by the thread's
 * own CPU clock (so that time the thread spends descheduled does not count),
 * as the Dask anchor times it with time.thread_time(). Without a thread CPU
 * clock, wall time is used, and the fastest of several runs counts.
 */
export function calibrate(): number {
  const known = g[KEY]
  if (known !== undefined) return known
  const clock = threadCpuMs() === undefined ? () => performance.now() : (threadCpuMs as () => number)
  let n = 20_000
  let elapsed = 0
  for (;;) {
    const t0 = clock()
    g[SINK] = spin(n)
    elapsed = clock() - t0
    if (elapsed > 200) break
    n *= 2
  }
  if (clock === threadCpuMs) {
    g[KEY] = n / elapsed
    return n / elapsed
  }
  let best = elapsed
  for (let i = 0; i < 3; i++) {
    const t0 = clock()
    g[SINK] = spin(n)
    best = Math.min(best, clock() - t0)
  }
  g[KEY] = n / best
  return n / best
}

export function burn(ms: number): number {
  const result = spin(Math.round(ms * calibrate()))
  g[SINK] = result
  return result
}
