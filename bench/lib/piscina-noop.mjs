// The no-op task Piscina runs in the microbenchmark, beside magpie's noop function.
export default function noop() {
  return null
}
