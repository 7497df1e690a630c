/**
 * The node's own stdout and stderr show what calls write, each line prefixed
 * `[function id]`, throttled per function (a token bucket), so that one
 * chatty function cannot flood them: what the bucket holds back is counted
 * and said once a second. The call's logs keep every line (see call-logs.ts).
 */

export interface LogPrinterOptions {
  /** Lines per second per function, on average, and at most at once. */
  linesPerS?: number
  burst?: number
  out?: { write(text: string): unknown }
  err?: { write(text: string): unknown }
  now?: () => number
}

interface Bucket {
  tokens: number
  at: number
  held: number
  /** A call whose lines were held back, for the note. */
  lastId: string
}

const DEFAULT_LINES_PER_S = 100
const DEFAULT_BURST = 200

export class LogPrinter {
  readonly #buckets = new Map<string, Bucket>()
  readonly #rate: number
  readonly #burst: number
  readonly #out: { write(text: string): unknown }
  readonly #err: { write(text: string): unknown }
  readonly #now: () => number
  readonly #timer: ReturnType<typeof setInterval>

  constructor(options: LogPrinterOptions = {}) {
    this.#rate = options.linesPerS ?? DEFAULT_LINES_PER_S
    this.#burst = options.burst ?? DEFAULT_BURST
    this.#out = options.out ?? process.stdout
    this.#err = options.err ?? process.stderr
    this.#now = options.now ?? Date.now
    this.#timer = setInterval(() => this.report(), 1000)
    this.#timer.unref()
  }

  /** Prints what a call wrote, as far as its function's bucket allows. */
  print(id: string, fn: string, stream: 'stdout' | 'stderr', text: string): void {
    const name = fn.split('@')[0] ?? fn
    const bucket = this.#bucket(name)
    const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n')
    let shown = ''
    for (const line of lines) {
      if (bucket.tokens < 1) {
        bucket.held += 1
        bucket.lastId = id
        continue
      }
      bucket.tokens -= 1
      shown += `[${name} ${id}] ${line}\n`
    }
    if (shown !== '') (stream === 'stdout' ? this.#out : this.#err).write(shown)
  }

  /** Says how many lines each function had held back since the last time. */
  report(): void {
    for (const [name, bucket] of this.#buckets) {
      if (bucket.held === 0) continue
      this.#err.write(
        `[magpie] ${bucket.held} lines of ${name} not shown here (over ${this.#rate} lines/s); ` +
          `its calls' logs keep them: magpie logs ${bucket.lastId}\n`,
      )
      bucket.held = 0
    }
  }

  close(): void {
    clearInterval(this.#timer)
    this.report()
  }

  #bucket(name: string): Bucket {
    const now = this.#now()
    let bucket = this.#buckets.get(name)
    if (!bucket) {
      bucket = { tokens: this.#burst, at: now, held: 0, lastId: '' }
      this.#buckets.set(name, bucket)
      return bucket
    }
    bucket.tokens = Math.min(this.#burst, bucket.tokens + ((now - bucket.at) / 1000) * this.#rate)
    bucket.at = now
    return bucket
  }
}
