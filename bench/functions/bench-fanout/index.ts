/** bench-fanout(n): makes n calls of bench-noop from inside the node and waits for all; answers calls per second. */
import { get, remote } from 'magpie'

export default async function benchFanout(n: number) {
  const noop = remote('bench-noop')
  const started = performance.now()
  await get(Array.from({ length: n }, () => noop.remote()))
  return { perSecond: Math.round(n / ((performance.now() - started) / 1000)) }
}
