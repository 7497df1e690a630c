/**
 * The seed pipeline, driven from the SDK as a user would write it for their
 * own data: prepare every source once, plan each source's samples as soon as
 * it is prepared, extract every sample with a reference to its source's data
 * (never the data itself), group the results by key and compile each group.
 * It runs the same on a platform and in local mode.
 */
import { createHash } from 'node:crypto'
import { type Client, type ObjectRef, ProgressBar } from '../../sdk/index.ts'
import type { compile, extract, planSamples, prepare } from './stages.ts'
import { GROUPS, type Result, type Row, SOURCES } from './stages.ts'

export interface PipelineResult {
  answer: Row[]
  answer_sha: string
  samples: number
  prepares: number
  seconds: number
}

export async function runPipeline(
  mp: Client,
  options: { scale?: number; progress?: boolean } = {},
): Promise<PipelineResult> {
  const scale = options.scale ?? 1
  const prepareFn = mp.remote<typeof prepare>('prepare')
  const planFn = mp.remote<typeof planSamples>('plan-samples')
  const extractFn = mp.remote<typeof extract>('extract')
  const compileFn = mp.remote<typeof compile>('compile')
  const started = performance.now()
  // 1. Every source is prepared once; `data[i]` is a reference to its bytes, wherever they are.
  const data = Array.from({ length: SOURCES }, (_, i) => prepareFn.remote(i, scale))
  // 2. Each source's samples are planned as soon as it is prepared.
  const plans = data.map((d, i) => planFn.remote(i, d))
  const sourceOf = new Map<ObjectRef, number>(plans.map((p, i) => [p, i]))
  // 3. Each sample is extracted as soon as its source's plan is known: no waiting for the slowest source.
  const samples: ObjectRef<Result[]>[] = []
  for await (const [plan, list] of mp.asCompleted(plans)) {
    const i = sourceOf.get(plan) as number
    for (const s of list) samples.push(extractFn.remote(i, s, data[i] as ObjectRef<Uint8Array>, scale))
  }
  // 4. The results come back as they finish; grouped by key.
  const groups: number[][] = Array.from({ length: GROUPS }, () => [])
  const bar = options.progress === false ? undefined : new ProgressBar(samples.length, { label: 'samples' })
  let done = 0
  for await (const [, results] of mp.asCompleted(samples)) {
    for (const [key, value] of results) groups[key]?.push(value)
    bar?.update(++done)
  }
  bar?.done()
  // 5. One compile per group.
  const answer: Row[] = await mp.get(groups.map((v, key) => compileFn.remote(key, v, scale)))
  const lines = answer.map((r) => `${r.key},${r.count},${r.sum}\n`).join('')
  return {
    answer,
    answer_sha: createHash('sha256').update(lines).digest('hex').slice(0, 16),
    samples: samples.length,
    prepares: data.length,
    seconds: (performance.now() - started) / 1000,
  }
}
