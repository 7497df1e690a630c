/** busy(ms): keeps its thread busy for `ms` milliseconds, then resolves to ms: CPU-bound work in its plainest form. */
export default function busy(ms: number): number {
  if (typeof ms !== 'number' || !(ms >= 0) || ms > 60_000) throw new TypeError('ms must be from 0 to 60000')
  const end = performance.now() + ms
  while (performance.now() < end) {}
  return ms
}
