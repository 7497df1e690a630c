/** prepare-source(i, scale): the expensive preparation of source i: 2 MiB of source_data. */
import { burn } from '../_lib/burn.ts'
import { BYTES, checkScale, checkSource, PREP_MS } from '../_lib/seed.ts'

export default function prepareSource(i: number, scale?: number): Uint8Array {
  const source = checkSource(i)
  burn(PREP_MS / checkScale(scale))
  // Byte k is (i * 31 + k) % 251: one period written out, then doubled in place.
  // Bytes made in shared memory reach the node and later calls without a copy.
  const out = new Uint8Array(new SharedArrayBuffer(BYTES))
  for (let k = 0; k < 251; k++) out[k] = (source * 31 + k) % 251
  for (let filled = 251; filled < BYTES; filled *= 2)
    out.copyWithin(filled, 0, Math.min(filled, BYTES - filled))
  return out
}
