/** obj-size(bytes): how many bytes it was given (and their last one, so that they were there). */
export default function objSize(bytes: Uint8Array): [number, number] {
  return [bytes.byteLength, bytes[bytes.byteLength - 1] ?? 0]
}
