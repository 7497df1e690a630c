/** bench-counter: the smallest stateful actor, for bench:actors. */
export default class BenchCounter {
  n = 0

  add(by: number): number {
    this.n += by
    return this.n
  }
}
