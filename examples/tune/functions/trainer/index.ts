/** trainer: the same trainable as an actor: made with its config, one `step()` per step. */
import { type Config, diverges, lossAt, work } from '../../objective.ts'

export default class Trainer {
  #config: Config
  #step = 0

  constructor(config: Config) {
    this.#config = config
  }

  step(): { loss: number } {
    this.#step++
    work(this.#config.stepMs ?? 5)
    if (diverges(this.#config)) throw new Error('the loss diverged')
    return { loss: lossAt(this.#config, this.#step) }
  }
}
