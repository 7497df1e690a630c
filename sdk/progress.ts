/**
 * A progress bar on stderr: done of total, rate and time left. On a
 * terminal it redraws one line at most ten times a second; elsewhere (a log
 * file, CI) it writes a plain line every few seconds instead.
 */

export interface ProgressSink {
  write(text: string): unknown
  isTTY?: boolean
}

export interface ProgressOptions {
  /** What is counted ("files", "calls"); default "done". */
  label?: string
  /** Where it is drawn (default stderr). */
  sink?: ProgressSink
  /** Seconds between plain lines where the sink is not a terminal (default 5). */
  everyS?: number
}

function stderr(): ProgressSink {
  const proc = (globalThis as { process?: { stderr?: ProgressSink } }).process
  return proc?.stderr ?? { write: (text: string) => console.error(text.trim()), isTTY: false }
}

const REDRAW_MS = 100
const WIDTH = 30

/** A duration as `1h02m`, `3m05s` or `12s`. */
export function formatSeconds(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?'
  const s = Math.max(0, Math.round(seconds))
  if (s >= 3600) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
  if (s >= 60) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
  return `${s}s`
}

/**
 * @example
 * const bar = new ProgressBar(files.length, { label: 'files' })
 * for await (const r of mp.settled(refs)) bar.update(++done, failed)
 * bar.done()
 */
export class ProgressBar {
  readonly #total: number
  readonly #sink: ProgressSink
  readonly #label: string
  readonly #tty: boolean
  readonly #everyMs: number
  readonly #started = Date.now()
  #done = 0
  #failed = 0
  #drawnAt = 0
  #ended = false

  constructor(total: number, options: ProgressOptions = {}) {
    this.#total = total
    this.#sink = options.sink ?? stderr()
    this.#label = options.label ?? 'done'
    this.#tty = this.#sink.isTTY === true
    this.#everyMs = (options.everyS ?? 5) * 1000
    // A terminal shows the bar at once; a log gets its first line after everyS, with a rate worth reading.
    if (this.#tty) this.#draw()
    else this.#drawnAt = this.#started
  }

  /** Sets how many are done (failures among them: `failed`); drawn when it is time. */
  update(done: number, failed = this.#failed): void {
    this.#done = done
    this.#failed = failed
    const now = Date.now()
    if (now - this.#drawnAt >= (this.#tty ? REDRAW_MS : this.#everyMs)) this.#draw(now)
  }

  /** Draws the last state and ends the line. */
  done(): void {
    if (this.#ended) return
    this.#ended = true
    this.#draw()
    if (this.#tty) this.#sink.write('\n')
  }

  /** The line as it stands: `[####      ] 512/10000 files 5% · 830/s · 11s left · 2 failed`. */
  line(now = Date.now()): string {
    const seconds = (now - this.#started) / 1000
    const rate = seconds > 0 ? this.#done / seconds : 0
    const left = rate > 0 ? (this.#total - this.#done) / rate : Number.POSITIVE_INFINITY
    const share = this.#total === 0 ? 1 : this.#done / this.#total
    const filled = Math.round(share * WIDTH)
    const parts = [
      `[${'#'.repeat(filled)}${' '.repeat(WIDTH - filled)}] ${this.#done}/${this.#total} ${this.#label} ${Math.floor(share * 100)}%`,
      `${rate >= 10 ? Math.round(rate) : rate.toFixed(1)}/s`,
      this.#done >= this.#total ? `${formatSeconds(seconds)} in all` : `${formatSeconds(left)} left`,
    ]
    if (this.#failed > 0) parts.push(`${this.#failed} failed`)
    return parts.join(' · ')
  }

  #draw(now = Date.now()): void {
    this.#drawnAt = now
    this.#sink.write(this.#tty ? `\r${this.line(now)}\u001b[K` : `${this.line(now)}\n`)
  }
}
