/**
 * obj-roundtrip(size, rounds): inside a function, `rounds` puts of `size`
 * bytes into this node's store (each copies the bytes once, into shared
 * memory), then a get of each; returns the time each phase took.
 */
import { get, put, wait } from 'magpie'

export default async function objRoundtrip(size: number, rounds: number) {
  const source = new Uint8Array(size).map((_, i) => i % 251)
  const t0 = performance.now()
  const refs = []
  for (let i = 0; i < rounds; i++) refs.push(await put(source))
  await wait(refs, { numReturns: refs.length })
  const t1 = performance.now()
  let check = 0
  for (const ref of refs) {
    const bytes = await get(ref)
    check += bytes[size - 1] ?? 0
  }
  const t2 = performance.now()
  return { putMs: t1 - t0, getMs: t2 - t1, check }
}
