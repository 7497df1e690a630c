/** bench-async-counter: the same, with an async method, as Ray's async actor microbenchmark has. */
export default class BenchAsyncCounter {
  n = 0

  async add(by: number): Promise<number> {
    this.n += by
    return this.n
  }
}
