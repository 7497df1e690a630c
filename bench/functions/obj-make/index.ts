/** obj-make(size, seed): `size` bytes, different for each seed. */
export default function objMake(size: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(size)
  for (let i = 0; i < size; i += 4096) bytes[i] = (seed + i) % 256
  return bytes
}
