/**
 * When objects' TTLs may run out: ids filed by the second their time is up,
 * taken out once that second has passed. An id is filed once; an object read
 * again meanwhile is filed anew when its bucket comes due, so that reads cost
 * nothing here.
 */
export class Expiries {
  readonly #buckets = new Map<number, Set<string>>()

  /** Files `id` under the second `atMs` falls in, rounded up; returns that second, to remove it by. */
  add(id: string, atMs: number): number {
    const second = Math.ceil(atMs / 1000)
    const ids = this.#buckets.get(second)
    if (ids) ids.add(id)
    else this.#buckets.set(second, new Set([id]))
    return second
  }

  remove(id: string, second: number): void {
    this.#buckets.get(second)?.delete(id)
  }

  /** Takes out every id filed under a second that has passed by `nowMs`. */
  due(nowMs: number): string[] {
    const ids: string[] = []
    for (const [second, bucket] of this.#buckets) {
      if (second * 1000 > nowMs) continue
      this.#buckets.delete(second)
      for (const id of bucket) ids.push(id)
    }
    return ids
  }
}
