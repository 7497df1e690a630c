/**
 * fan-out(n, name, ...args): calls the function `name` (default noop) n times
 * with `args` from inside the cluster, waits for all, and reports how long
 * that took.
 */
import { get, remote } from 'magpie'

export default async function fanOut(n: number, name = 'noop', ...args: unknown[]) {
  if (!Number.isInteger(n) || n < 1) throw new TypeError('n must be a positive integer')
  const fn = remote(name)
  const started = performance.now()
  const refs = Array.from({ length: n }, () => fn.remote(...args))
  await get(refs)
  const seconds = (performance.now() - started) / 1000
  return { calls: n, seconds, perSecond: n / seconds }
}
