/** echo(x): x, unchanged; bytes come back as bytes. */
export default function echo<T>(x: T): T {
  return x
}
