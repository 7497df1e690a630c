/** compile-group(key, values, scale): the final row of one group: `{key, count, sum}`. */
import { burn } from '../_lib/burn.ts'
import { COMPILE_MS, checkScale, PER_ITEM_MS } from '../_lib/seed.ts'

export default function compileGroup(key: number, values: number[], scale?: number) {
  if (!Number.isInteger(key)) throw new TypeError('key must be an integer')
  if (!Array.isArray(values) || values.some((v) => typeof v !== 'number')) {
    throw new TypeError('values must be an array of numbers')
  }
  burn((COMPILE_MS + PER_ITEM_MS * values.length) / checkScale(scale))
  return { key, count: values.length, sum: values.reduce((a, b) => a + b, 0) }
}
