/**
 * A double-ended queue on a growable ring buffer: O(1) at both ends. A worker
 * takes from the front of its own deque (newest nested work first); thieves
 * take from the back (oldest work, the biggest subtrees).
 */

/** The queue a scheduler keeps per worker. */
export interface TaskDeque<T> {
  readonly length: number
  pushFront(item: T): void
  pushBack(item: T): void
  popFront(): T | undefined
  popBack(): T | undefined
  peekBack(): T | undefined
}

export class RingDeque<T> implements TaskDeque<T> {
  #items: Array<T | undefined>
  #head = 0
  #length = 0

  constructor(initialCapacity = 16) {
    let capacity = 1
    while (capacity < initialCapacity) capacity *= 2
    this.#items = new Array(capacity)
  }

  get length(): number {
    return this.#length
  }

  pushFront(item: T): void {
    this.#growIfFull()
    this.#head = (this.#head - 1) & this.#mask
    this.#items[this.#head] = item
    this.#length += 1
  }

  pushBack(item: T): void {
    this.#growIfFull()
    this.#items[(this.#head + this.#length) & this.#mask] = item
    this.#length += 1
  }

  popFront(): T | undefined {
    if (this.#length === 0) return undefined
    const item = this.#items[this.#head]
    this.#items[this.#head] = undefined
    this.#head = (this.#head + 1) & this.#mask
    this.#length -= 1
    return item
  }

  popBack(): T | undefined {
    if (this.#length === 0) return undefined
    const at = (this.#head + this.#length - 1) & this.#mask
    const item = this.#items[at]
    this.#items[at] = undefined
    this.#length -= 1
    return item
  }

  peekBack(): T | undefined {
    return this.#length === 0 ? undefined : this.#items[(this.#head + this.#length - 1) & this.#mask]
  }

  /** Removes up to `limit` items that match, starting from the back (oldest work first). */
  removeFromBack(match: (item: T) => boolean, limit: number): T[] {
    const removed: T[] = []
    const kept: T[] = []
    while (removed.length < limit && this.#length > 0) {
      const item = this.popBack() as T
      ;(match(item) ? removed : kept).push(item)
    }
    for (let i = kept.length - 1; i >= 0; i--) this.pushBack(kept[i] as T)
    return removed
  }

  /** Removes and returns the items that match (at most `limit`), keeping the others in order. */
  removeWhere(match: (item: T) => boolean, limit = Number.POSITIVE_INFINITY): T[] {
    const kept: T[] = []
    const removed: T[] = []
    for (let item = this.popFront(); item !== undefined; item = this.popFront()) {
      ;(removed.length < limit && match(item) ? removed : kept).push(item)
    }
    for (const item of kept) this.pushBack(item)
    return removed
  }

  get #mask(): number {
    return this.#items.length - 1
  }

  #growIfFull(): void {
    if (this.#length < this.#items.length) return
    const next: Array<T | undefined> = new Array(this.#items.length * 2)
    for (let i = 0; i < this.#length; i++) next[i] = this.#items[(this.#head + i) & this.#mask]
    this.#items = next
    this.#head = 0
  }
}
