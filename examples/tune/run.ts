/**
 * Hyperparameter search with early stopping, on a synthetic objective whose
 * best point is known (objective.ts): a grid of 7 × 5 configs, each trial
 * up to 27 steps, at most 4 at once. Run twice in the same run: every trial
 * to the end, then with ASHA; prints both tables' heads and one JSON line:
 * the best config each found and the steps each ran.
 *
 *   npm run example:tune -- [--url URL] [--actor] [--step-ms 5]
 *
 * --actor uses the actor trainable (trainer: one step() per step) instead
 * of the function that reports (train). Without --url it starts `magpie
 * start` on this machine, and stops it after.
 */
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { connect } from '../../sdk/index.ts'
import { asha, grid, type TuneOptions, tune } from '../../sdk/tune.ts'
import { withPlatform } from '../lib/platform.ts'
import { BEST } from './objective.ts'

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    actor: { type: 'boolean', default: false },
    'step-ms': { type: 'string', default: '5' },
    'max-steps': { type: 'string', default: '27' },
  },
})
const HERE = import.meta.dirname
const maxSteps = Number(values['max-steps'])

await withPlatform({ url: values.url, functions: join(HERE, 'functions') }, async (url) => {
  const mp = connect(url)
  const search: TuneOptions = {
    trainable: values.actor ? { actor: 'trainer' } : 'train',
    space: {
      x: grid([0, 1, 2, 3, 4, 5, 6]),
      y: grid([-3, -2, -1, 0, 1]),
      stepMs: Number(values['step-ms']),
      maxSteps,
    },
    metric: 'loss',
    mode: 'min',
    maxConcurrent: 4,
    maxSteps,
  }
  const full = await tune(mp, search)
  const early = await tune(mp, {
    ...search,
    scheduler: asha({ maxT: maxSteps, gracePeriod: 1, reductionFactor: 3 }),
  })
  await mp.close()
  console.error(`every trial to the end:\n${full.table().split('\n').slice(0, 6).join('\n')}\n`)
  console.error(`with ASHA:\n${early.table().split('\n').slice(0, 6).join('\n')}\n`)
  for (const t of early.trials.filter((t) => t.status === 'failed'))
    console.error(`trial ${t.id} failed: ${t.error}`)
  const pick = (r: typeof full) => ({ x: r.best?.config.x, y: r.best?.config.y })
  const count = (r: typeof full, status: string) => r.trials.filter((t) => t.status === status).length
  console.log(
    JSON.stringify({
      trainable: values.actor ? 'actor' : 'function',
      trials: full.trials.length,
      known_best: BEST,
      full: {
        best: pick(full),
        steps: full.totalSteps,
        seconds: full.seconds,
        failed: count(full, 'failed'),
      },
      asha: {
        best: pick(early),
        steps: early.totalSteps,
        seconds: early.seconds,
        stopped: count(early, 'stopped'),
        failed: count(early, 'failed'),
      },
      asha_steps_share: Math.round((early.totalSteps / full.totalSteps) * 1000) / 1000,
    }),
  )
})
