/** noop(): does nothing; the cost of a call is all that is left to measure. */
export default function noop(): null {
  return null
}
