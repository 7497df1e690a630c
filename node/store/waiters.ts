/**
 * Who waits for which object to settle, and the waits built on that: one
 * object (whenSettled), several (waitAny), or a callback (on). Generic over
 * the record kept per object, so that a node's store and a head's directory
 * wait the same way. A gone object (lookup undefined) counts as settled.
 */

export type ObjectStatus = 'pending' | 'running' | 'ready' | 'failed' | 'cancelled'

type Listener<E> = (entry: E | undefined) => void

export function isSettled(entry: { readonly status: ObjectStatus }): boolean {
  return entry.status === 'ready' || entry.status === 'failed' || entry.status === 'cancelled'
}

/** A timer, or none for an infinite wait. */
function startTimer(callback: () => void, ms: number): ReturnType<typeof setTimeout> | undefined {
  return Number.isFinite(ms) ? setTimeout(callback, Math.min(ms, 2 ** 31 - 1)) : undefined
}

export class Waiters<E extends { readonly status: ObjectStatus }> {
  readonly #listeners = new Map<string, Listener<E>[]>()
  readonly #lookup: (id: string) => E | undefined

  constructor(lookup: (id: string) => E | undefined) {
    this.#lookup = lookup
  }

  /** Calls `listener` once the object settles (or at once if it has); undefined means it is gone. */
  on(id: string, listener: Listener<E>): () => void {
    const entry = this.#lookup(id)
    if (!entry || isSettled(entry)) {
      listener(entry)
      return () => {}
    }
    let list = this.#listeners.get(id)
    if (!list) {
      list = []
      this.#listeners.set(id, list)
    }
    list.push(listener)
    return () => {
      const current = this.#listeners.get(id)
      if (!current) return
      const at = current.indexOf(listener)
      if (at >= 0) current.splice(at, 1)
      if (current.length === 0) this.#listeners.delete(id)
    }
  }

  /** Wakes whoever waits for `id`: it settled (`entry`) or is gone (undefined). */
  notify(id: string, entry: E | undefined): void {
    const list = this.#listeners.get(id)
    if (!list) return
    this.#listeners.delete(id)
    for (const listener of list) listener(entry)
  }

  /** Whether anyone waits for the object. */
  has(id: string): boolean {
    return this.#listeners.has(id)
  }

  /** Resolves with the settled entry, or with the entry as it stands after `timeoutMs` (Infinity: no limit). */
  whenSettled(id: string, timeoutMs: number): Promise<E | undefined> {
    const entry = this.#lookup(id)
    if (!entry || isSettled(entry) || timeoutMs <= 0) return Promise.resolve(entry)
    return new Promise((resolve) => {
      const timer = startTimer(() => {
        off()
        resolve(this.#lookup(id))
      }, timeoutMs)
      const off = this.on(id, (settled) => {
        if (timer) clearTimeout(timer)
        resolve(settled)
      })
    })
  }

  /**
   * Waits until `numReturns` of `ids` are settled or `timeoutMs` passes; returns
   * the settled ids in input order, at most `numReturns` of them. Gone ids count as settled.
   */
  waitAny(ids: readonly string[], numReturns: number, timeoutMs: number): Promise<string[]> {
    const settledNow = () => ids.filter((id) => this.#isDone(id))
    const first = settledNow()
    if (first.length >= numReturns || timeoutMs <= 0) return Promise.resolve(first.slice(0, numReturns))
    return new Promise((resolve) => {
      let count = first.length
      const offs: Array<() => void> = []
      const finish = () => {
        if (timer) clearTimeout(timer)
        for (const off of offs) off()
        resolve(settledNow().slice(0, numReturns))
      }
      const timer = startTimer(finish, timeoutMs)
      const done = new Set(first)
      for (const id of ids) {
        if (done.has(id)) continue
        offs.push(
          this.on(id, () => {
            count += 1
            if (count === numReturns) queueMicrotask(finish)
          }),
        )
      }
    })
  }

  #isDone(id: string): boolean {
    const entry = this.#lookup(id)
    return entry === undefined || isSettled(entry)
  }
}
