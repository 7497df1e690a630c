/**
 * Messages to one destination, sent in batches, in order, one batch at a
 * time, and never dropped silently: a batch that fails is sent again after a
 * capped exponential backoff with jitter, with whatever was added meanwhile.
 * What still cannot go (the destination refused it for good, stayed away past
 * `giveUpMs`, or more piled up than `maxItems`) is handed to `onGiveUp`
 * with the cause, once per batch given up, for the sender to settle.
 */
import { type BackoffOptions, backoffDelay } from '../sdk/backoff.ts'
import { isTransient } from './client.ts'

export interface OutboxOptions<T> extends BackoffOptions {
  send(batch: T[]): Promise<void>
  /** Called with what could not be sent, and why. */
  onGiveUp(items: T[], cause: unknown): void
  /** Most items waiting; beyond it the oldest are given up (default 100,000). */
  maxItems?: number
  /** How long a destination may fail before what waits for it is given up, in ms (default 30,000). */
  giveUpMs?: number
  /**
   * Batches go at most this often, in ms (default 0: each turn of the event
   * loop): what comes within the window after a batch waits for the next,
   * so that a steady trickle costs a request per window, not per message.
   */
  gatherMs?: number
  now?: () => number
}

export class Outbox<T> {
  readonly #options: OutboxOptions<T>
  readonly #maxItems: number
  readonly #giveUpMs: number
  readonly #now: () => number
  #waiting: T[] = []
  #sending = false
  #scheduled = false
  #failures = 0
  #failingSince = 0
  #lastSent = Number.NEGATIVE_INFINITY
  #retryTimer: ReturnType<typeof setTimeout> | undefined
  #gatherTimer: ReturnType<typeof setTimeout> | undefined
  #idle: Array<() => void> = []

  constructor(options: OutboxOptions<T>) {
    this.#options = options
    this.#maxItems = options.maxItems ?? 100_000
    this.#giveUpMs = options.giveUpMs ?? 30_000
    this.#now = options.now ?? Date.now
  }

  push(item: T): void {
    this.#waiting.push(item)
    if (this.#waiting.length > this.#maxItems) {
      const over = this.#waiting.splice(0, this.#waiting.length - this.#maxItems)
      this.#options.onGiveUp(
        over,
        new Error(`more than ${this.#maxItems} messages wait for a destination that fails`),
      )
    }
    // Everything added in this turn of the event loop (or gathering window) goes in one batch.
    if (!this.#sending && !this.#scheduled && this.#retryTimer === undefined) {
      this.#scheduled = true
      const wait = this.#lastSent + (this.#options.gatherMs ?? 0) - this.#now()
      if (wait > 0) this.#gatherTimer = setTimeout(() => this.#flush(), wait)
      else setImmediate(() => this.#flush())
    }
  }

  /** What waits for the gathering window goes in this turn of the event loop instead (nothing more is coming). */
  flushSoon(): void {
    if (this.#gatherTimer === undefined) return
    clearTimeout(this.#gatherTimer)
    this.#gatherTimer = undefined
    setImmediate(() => this.#flush())
  }

  /** Resolves once nothing waits (sent or given up). */
  drained(): Promise<void> {
    if (this.#waiting.length === 0 && !this.#sending) return Promise.resolve()
    return new Promise((resolve) => this.#idle.push(resolve))
  }

  /** Gives up what waits, at once, without calling onGiveUp (its destination is known gone and its items settled otherwise). */
  discard(): T[] {
    if (this.#gatherTimer !== undefined) {
      clearTimeout(this.#gatherTimer)
      this.#gatherTimer = undefined
      this.#scheduled = false
    }
    clearTimeout(this.#retryTimer)
    this.#retryTimer = undefined
    const items = this.#waiting
    this.#waiting = []
    this.#wakeIdle()
    return items
  }

  #flush(): void {
    clearTimeout(this.#gatherTimer)
    this.#gatherTimer = undefined
    this.#scheduled = false
    this.#retryTimer = undefined
    if (this.#sending || this.#waiting.length === 0) {
      this.#wakeIdle()
      return
    }
    const batch = this.#waiting
    this.#waiting = []
    this.#sending = true
    this.#lastSent = this.#now()
    this.#options.send(batch).then(
      () => {
        this.#failures = 0
        this.#sending = false
        this.#flush()
      },
      (err: unknown) => {
        this.#sending = false
        this.#failed(batch, err)
      },
    )
  }

  #failed(batch: T[], err: unknown): void {
    const now = this.#now()
    if (this.#failures === 0) this.#failingSince = now
    this.#failures += 1
    if (!isTransient(err) || now - this.#failingSince >= this.#giveUpMs) {
      this.#failures = 0
      this.#options.onGiveUp(batch, err)
      this.#flush()
      return
    }
    // Sent again first, before what came since: the destination sees them in order.
    this.#waiting = batch.concat(this.#waiting)
    this.#retryTimer = setTimeout(() => this.#flush(), backoffDelay(this.#failures - 1, this.#options))
  }

  #wakeIdle(): void {
    if (this.#waiting.length > 0 || this.#sending) return
    const idle = this.#idle
    this.#idle = []
    for (const resolve of idle) resolve()
  }
}

/** One outbox per destination, made when first needed. */
export class Outboxes<T> {
  readonly #boxes = new Map<string, Outbox<T>>()
  readonly #make: (destination: string) => Outbox<T>

  constructor(make: (destination: string) => Outbox<T>) {
    this.#make = make
  }

  push(destination: string, item: T): void {
    let box = this.#boxes.get(destination)
    if (!box) {
      box = this.#make(destination)
      this.#boxes.set(destination, box)
    }
    box.push(item)
  }

  /** See Outbox.flushSoon. */
  flushSoon(destination: string): void {
    this.#boxes.get(destination)?.flushSoon()
  }

  /** What waits for `destination`, taken out unsent. */
  discard(destination: string): T[] {
    const box = this.#boxes.get(destination)
    this.#boxes.delete(destination)
    return box ? box.discard() : []
  }

  /** Resolves once every outbox is empty. */
  async drained(): Promise<void> {
    await Promise.all([...this.#boxes.values()].map((box) => box.drained()))
  }
}
