/** The parameters of the seed pipeline (shared/workloads/seed-pipeline.md), shared by its stages. */
export const SOURCES = 32
export const GROUPS = 16
export const BYTES = 2 * 1024 * 1024
export const PREP_MS = 100
export const EXTRACT_MS = 10
export const POST_MS = 2
export const COMPILE_MS = 5
export const PER_ITEM_MS = 0.01

export function samplesOf(i: number): number {
  const rank = (i * 13) % SOURCES
  return Math.max(1, Math.floor(240 / (rank + 1)))
}

export function checkScale(scale: unknown): number {
  if (scale === undefined) return 1
  if (typeof scale !== 'number' || !(scale > 0)) throw new TypeError('scale must be a positive number')
  return scale
}

export function checkSource(i: unknown): number {
  if (!Number.isInteger(i) || (i as number) < 0 || (i as number) >= SOURCES) {
    throw new TypeError(`source must be an integer from 0 to ${SOURCES - 1}`)
  }
  return i as number
}

/** Total burned core-milliseconds of one run. */
export function totalWorkMs(scale: number): number {
  let samples = 0
  let items = 0
  for (let i = 0; i < SOURCES; i++) {
    const n = samplesOf(i)
    samples += n
    for (let s = 0; s < n; s++) items += (s % 3) + 1
  }
  return (
    (SOURCES * PREP_MS + samples * (EXTRACT_MS + POST_MS) + GROUPS * COMPILE_MS + PER_ITEM_MS * items) / scale
  )
}
