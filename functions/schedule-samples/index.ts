/** schedule-samples(i, sourceData): the samples of source i, known only once it is prepared. */
import { BYTES, checkSource, samplesOf } from '../_lib/seed.ts'

export default function scheduleSamples(i: number, sourceData: Uint8Array): number[] {
  const source = checkSource(i)
  if (!(sourceData instanceof Uint8Array) || sourceData.byteLength !== BYTES) {
    throw new TypeError(`sourceData must be ${BYTES} bytes`)
  }
  return Array.from({ length: samplesOf(source) }, (_, s) => s)
}
