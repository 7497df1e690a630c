/**
 * The pipeline's stages as plain functions, one per step of the workload
 * (shared with the benchmark: ../../functions/_lib). Each `burn(ms)` stands
 * for real work of that many milliseconds of one core: parsing a source,
 * cutting a sample out of it, scoring it, compiling a report.
 */
import { burn } from '../../functions/_lib/burn.ts'
import {
  BYTES,
  COMPILE_MS,
  EXTRACT_MS,
  GROUPS,
  PER_ITEM_MS,
  POST_MS,
  PREP_MS,
  samplesOf,
} from '../../functions/_lib/seed.ts'

export { GROUPS, SOURCES } from '../../functions/_lib/seed.ts'

/** One result of a sample: the group it belongs to, and its value. */
export type Result = [key: number, value: number]

/** A group's final row. */
export interface Row {
  key: number
  count: number
  sum: number
}

/** Load and prepare a source: expensive, and 2 MiB of data that every one of its samples reads. */
export function prepare(source: number, scale = 1): Uint8Array {
  burn(PREP_MS / scale)
  // Byte k is (source * 31 + k) % 251: one period written, then doubled in place. Bytes in shared
  // memory reach the node's object store without a copy.
  const data = new Uint8Array(new SharedArrayBuffer(BYTES))
  for (let k = 0; k < 251; k++) data[k] = (source * 31 + k) % 251
  for (let filled = 251; filled < BYTES; filled *= 2)
    data.copyWithin(filled, 0, Math.min(filled, BYTES - filled))
  return data
}

/** Which samples a prepared source has: known only now, and very uneven (240 for one source, 7 for another). */
export function planSamples(source: number, _data: Uint8Array): number[] {
  return Array.from({ length: samplesOf(source) }, (_, s) => s)
}

/** Extract one sample from its source's data and post-process it into 1 to 3 results. */
export function extract(source: number, sample: number, data: Uint8Array, scale = 1): Result[] {
  burn(EXTRACT_MS / scale)
  const byte = data[(sample * 4099) % BYTES] ?? 0
  burn(POST_MS / scale)
  const results: Result[] = []
  for (let j = 0; j < (sample % 3) + 1; j++) {
    const key = (source * 31 + sample * 7 + j) % GROUPS
    results.push([key, ((source * 1000003 + sample * 1009 + j) % 1000) + byte])
  }
  return results
}

/** Compile one group's values into its row. */
export function compile(key: number, values: number[], scale = 1): Row {
  burn((COMPILE_MS + PER_ITEM_MS * values.length) / scale)
  return { key, count: values.length, sum: values.reduce((a, b) => a + b, 0) }
}
