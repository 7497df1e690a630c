/** prepare-source(i, scale): the expensive preparation of source i: 2 MiB of source_data. */
import { burn } from '../_lib/burn.ts'
import { BYTES, checkScale, checkSource, PREP_MS } from '../_lib/seed.ts'

export default function prepareSource(i: number, scale?: number): Uint8Array {
  const source = checkSource(i)
  burn(PREP_MS / checkScale(scale))
  const out = new Uint8Array(BYTES)
  const period = new Uint8Array(251)
  for (let k = 0; k < 251; k++) period[k] = (source * 31 + k) % 251
  for (let at = 0; at < BYTES; at += 251) out.set(period.subarray(0, Math.min(251, BYTES - at)), at)
  return out
}
