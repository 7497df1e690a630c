/** chain(depth): a line of nested calls `depth` long; resolves to depth. */
import { get, remote } from 'magpie'

export default async function chain(depth: number): Promise<number> {
  if (!Number.isInteger(depth) || depth < 0) throw new TypeError('depth must be a non-negative integer')
  if (depth === 0) return 0
  return 1 + (await get(remote<typeof chain>('chain').remote(depth - 1)))
}
