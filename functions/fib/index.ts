/** fib(n): Fibonacci, as a tree of nested tasks (each call below 2 spawns two more). */
import { get, remote } from 'magpie'

export default async function fib(n: number): Promise<number> {
  if (!Number.isInteger(n) || n < 0) throw new TypeError('n must be a non-negative integer')
  if (n < 2) return n
  const self = remote<typeof fib>('fib')
  const [a, b] = await get([self.remote(n - 1), self.remote(n - 2)])
  return (a ?? 0) + (b ?? 0)
}
