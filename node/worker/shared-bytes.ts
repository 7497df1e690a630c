/** Bytes in shared memory, so that handing them to another thread copies nothing. */

/** The same bytes, in a SharedArrayBuffer (copied once if they are not there yet). */
export function toShared(bytes: Uint8Array): Uint8Array {
  if (bytes.buffer instanceof SharedArrayBuffer) return bytes
  const shared = new Uint8Array(new SharedArrayBuffer(bytes.byteLength))
  shared.set(bytes)
  return shared
}

/** A Buffer view of the bytes, without a copy. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}
