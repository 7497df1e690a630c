/** square(x): x times x. */
export default function square(x: number): number {
  return x * x
}
