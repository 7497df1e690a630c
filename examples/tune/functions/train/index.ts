/**
 * train: a trainable as a function. It reports its metrics after each step
 * with `report()`; the search reads them, and stops the trial early (ASHA)
 * by cancelling it, which the next `await report()` notices.
 */
import { report } from 'magpie/tune'
import { type Config, diverges, lossAt, work } from '../../objective.ts'

export default async function train(config: Config & { maxSteps?: number }): Promise<{ loss: number }> {
  let loss = Number.NaN
  for (let step = 1; step <= (config.maxSteps ?? 27); step++) {
    work(config.stepMs ?? 5)
    if (diverges(config)) throw new Error('the loss diverged')
    loss = lossAt(config, step)
    await report({ loss })
  }
  return { loss }
}
