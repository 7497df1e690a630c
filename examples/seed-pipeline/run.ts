/**
 * The seed pipeline on a platform (pipeline.ts), with a progress bar; prints
 * its answer_sha and how busy the cores were.
 *
 *   npm run example:seed -- [--url URL] [--scale 4] [--cpus N]
 *
 * Without --url it starts `magpie start` on this machine (and stops it);
 * with --url it deploys the functions there.
 */
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { totalWorkMs } from '../../functions/_lib/seed.ts'
import { connect } from '../../sdk/index.ts'
import { withPlatform } from '../lib/platform.ts'
import { runPipeline } from './pipeline.ts'
import type { compile } from './stages.ts'

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    scale: { type: 'string', default: '1' },
    cpus: { type: 'string', default: String(availableParallelism()) },
  },
})
const scale = Number(values.scale)
const cpus = Number(values.cpus)
const HERE = import.meta.dirname

await withPlatform({ url: values.url, functions: join(HERE, 'functions'), cpus }, async (url) => {
  const mp = connect(url)
  // Warm-up: each thread loads the code and calibrates its busy loop before the clock starts.
  await mp.get(
    Array.from({ length: 2 * cpus }, (_, k) => mp.remote<typeof compile>('compile').remote(k, [], 1000)),
  )
  const result = await runPipeline(mp, { scale })
  await mp.close()
  const idealS = totalWorkMs(scale) / 1000 / cpus
  console.log(
    JSON.stringify({
      answer_sha: result.answer_sha,
      results: result.answer.reduce((n, r) => n + r.count, 0),
      samples: result.samples,
      prepares: result.prepares,
      scale,
      cpus,
      makespan_s: Math.round(result.seconds * 1000) / 1000,
      ideal_s: Math.round(idealS * 1000) / 1000,
      efficiency: Math.round((idealS / result.seconds) * 1000) / 1000,
    }),
  )
})
