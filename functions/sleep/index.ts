/** sleep(ms): resolves to `ms` after `ms` milliseconds. It only waits, so many share a worker. */
export const config = { concurrency: 100 }

export default function sleep(ms: number): Promise<number> {
  if (typeof ms !== 'number' || !(ms >= 0)) throw new TypeError('ms must be a non-negative number')
  return new Promise((resolve) => setTimeout(() => resolve(ms), ms))
}
