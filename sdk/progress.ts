/** A one-line progress bar on stderr, for `get(refs, { progress: true })`. */

interface Sink {
  write(text: string): unknown
}

function stderr(): Sink {
  const proc = (globalThis as { process?: { stderr?: Sink } }).process
  return proc?.stderr ?? { write: (text: string) => console.error(text.trim()) }
}

export class ProgressBar {
  readonly #total: number
  readonly #sink: Sink
  readonly #width = 30
  #shown = -1

  constructor(total: number, sink: Sink = stderr()) {
    this.#total = total
    this.#sink = sink
    this.update(0)
  }

  update(done: number): void {
    if (done === this.#shown) return
    this.#shown = done
    const filled = this.#total === 0 ? this.#width : Math.round((done / this.#total) * this.#width)
    this.#sink.write(`\r[${'#'.repeat(filled)}${' '.repeat(this.#width - filled)}] ${done}/${this.#total}`)
  }

  done(): void {
    this.#sink.write('\n')
  }
}
