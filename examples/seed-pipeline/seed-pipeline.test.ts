/** The seed-pipeline example gives the workload's answer in local mode and on a platform. */
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { local } from '../../sdk/testing.ts'
import { stopSpawnedAfterAll } from '../../test/cluster-helpers.ts'
import { runExample } from '../lib/run-example.ts'
import { runPipeline } from './pipeline.ts'

const HERE = import.meta.dirname
const ANSWER_SHA = '72823fb8cecb1d49'
stopSpawnedAfterAll()

describe('the seed-pipeline example', () => {
  it('gives the answer in local mode, each source prepared once', async () => {
    const result = await runPipeline(local(join(HERE, 'functions')), { scale: 200, progress: false })
    expect(result).toMatchObject({ answer_sha: ANSWER_SHA, samples: 965, prepares: 32 })
    expect(result.answer.reduce((n, r) => n + r.count, 0)).toBe(1911)
  }, 60_000)

  it('gives the answer on a platform, with a progress bar on stderr', async () => {
    const { output, json: line } = await runExample(join(HERE, 'run.ts'), ['--scale', '20'], 'answer_sha')
    expect(line).toMatchObject({ answer_sha: ANSWER_SHA, results: 1911, samples: 965, prepares: 32 })
    expect(output).toMatch(/965\/965 samples 100%/)
  }, 120_000)
})
