/** The tune example: the search finds the known best point, in local mode and on a platform, and ASHA spends at most half the steps. */
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { local } from '../../sdk/testing.ts'
import { asha, grid, tune } from '../../sdk/tune.ts'
import { stopSpawnedAfterAll } from '../../test/cluster-helpers.ts'
import { runExample } from '../lib/run-example.ts'

const HERE = import.meta.dirname
stopSpawnedAfterAll()

describe('the tune example', () => {
  for (const trainable of ['train', { actor: 'trainer' }] as const) {
    it(`finds the best point with a ${typeof trainable === 'string' ? 'function' : 'actor'} trainable in local mode, and reports the failed trial`, async () => {
      const mp = local(join(HERE, 'functions'))
      const result = await tune(mp, {
        trainable,
        space: { x: grid([0, 1, 2, 3, 4]), y: grid([-2, -1, 0, 1]), stepMs: 0, maxSteps: 9 },
        metric: 'loss',
        maxSteps: 9,
        scheduler: asha({ maxT: 9 }),
      })
      expect(result.best?.config).toMatchObject({ x: 3, y: -1 })
      expect(result.trials).toHaveLength(20)
      const failed = result.trials.filter((t) => t.status === 'failed')
      expect(failed.map((t) => t.config)).toEqual([expect.objectContaining({ x: 0, y: 1 })])
      expect(failed[0]?.error).toContain('the loss diverged')
      expect(result.trials.some((t) => t.status === 'stopped')).toBe(true)
      expect(result.totalSteps).toBeLessThan(19 * 9)
      expect(result.table().split('\n')[1]).toMatch(/^\d+\s+done\s+9\s+0\.7222/)
    })
  }

  it('runs on a platform: both searches find the best, ASHA with at most half the steps', async () => {
    const { json: line } = await runExample(join(HERE, 'run.ts'), ['--step-ms', '1'], 'trainable')
    expect(line).toMatchObject({
      trials: 35,
      full: { best: { x: 3, y: -1 }, steps: 34 * 27, failed: 1 },
      asha: { best: { x: 3, y: -1 }, failed: 1 },
    })
    expect(line.asha_steps_share).toBeLessThanOrEqual(0.5)
  }, 120_000)
})
