/** bench-noop(): does nothing, for bench:actors' task throughput beside idle actors. */
export default function benchNoop(): null {
  return null
}
