/**
 * process-sample(i, s, sourceData, scale): extract sample s of source i and
 * post-process it into 1 to 3 `[key, value]` results.
 */
import { burn } from '../_lib/burn.ts'
import { BYTES, checkScale, checkSource, EXTRACT_MS, GROUPS, POST_MS } from '../_lib/seed.ts'

export default function processSample(i: number, s: number, sourceData: Uint8Array, scale?: number) {
  const source = checkSource(i)
  const f = checkScale(scale)
  if (!Number.isInteger(s) || s < 0) throw new TypeError('s must be a non-negative integer')
  if (!(sourceData instanceof Uint8Array) || sourceData.byteLength !== BYTES) {
    throw new TypeError(`sourceData must be ${BYTES} bytes`)
  }
  burn(EXTRACT_MS / f)
  const byte = sourceData[(s * 4099) % BYTES] ?? 0
  burn(POST_MS / f)
  const out: Array<[number, number]> = []
  for (let j = 0; j < (s % 3) + 1; j++) {
    out.push([(source * 31 + s * 7 + j) % GROUPS, ((source * 1000003 + s * 1009 + j) % 1000) + byte])
  }
  return out
}
