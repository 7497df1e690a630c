/**
 * The batching both state stores share: changes made in one turn of the
 * event loop are written together, one batch after another, in order.
 */
import type { Namespace, StateSnapshot, StateStore } from './types.ts'

/** A change: a value set, or (without value) a key deleted. */
export interface Change {
  ns: Namespace
  key: string
  value?: string
}

export abstract class BatchedState implements StateStore {
  abstract readonly where: string
  #pending: Change[] = []
  /** The batch that will take the changes made since the last one went out. */
  #next: Promise<void> | undefined
  /** The batch written last (or being written). */
  #last: Promise<void> = Promise.resolve()

  abstract load(): Promise<StateSnapshot>
  /** Writes a batch of changes, in order. */
  protected abstract write(changes: Change[]): Promise<void>
  protected abstract release(): Promise<void>

  set(ns: Namespace, key: string, value: string): void {
    this.#pending.push({ ns, key, value })
    this.#schedule()
  }

  delete(ns: Namespace, key: string): void {
    this.#pending.push({ ns, key })
    this.#schedule()
  }

  flushed(): Promise<void> {
    return this.#next ?? this.#last
  }

  async close(): Promise<void> {
    await this.flushed().catch(() => {})
    await this.release()
  }

  #schedule(): void {
    if (this.#next) return
    this.#next = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      this.#next = undefined
      const changes = this.#pending
      this.#pending = []
      // Each batch after the one before, whether that one was written or not.
      this.#last = this.#last.catch(() => {}).then(() => this.write(changes))
      return this.#last
    })
    // A failure is the business of whoever awaits flushed(); unawaited, it must not end the process.
    this.#next.catch(() => {})
  }
}
