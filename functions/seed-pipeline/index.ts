/**
 * seed-pipeline({scale}): the whole seed pipeline as nested tasks. Prepares all
 * sources, submits each source's samples as soon as its sample list is known
 * (passing a ref to source_data, never the data), regroups and compiles.
 */
import { createHash } from 'node:crypto'
import { get, type ObjectRef, remote, wait } from 'magpie'
import { checkScale, GROUPS, SOURCES } from '../_lib/seed.ts'

type Row = { key: number; count: number; sum: number }

export default async function seedPipeline(input: { scale?: number } = {}) {
  const scale = checkScale(input?.scale)
  const prepare = remote('prepare-source')
  const schedule = remote<(i: number, d: Uint8Array) => number[]>('schedule-samples')
  const processSample = remote<(...a: unknown[]) => Array<[number, number]>>('process-sample')
  const compile = remote<(...a: unknown[]) => Row>('compile-group')

  const sources = Array.from({ length: SOURCES }, (_, i) => prepare.remote(i, scale))
  const plans = sources.map((data, i) => schedule.remote(i, data as never))
  const sourceOf = new Map(plans.map((plan, i) => [plan.id, i]))
  const samples: ObjectRef<Array<[number, number]>>[] = []
  let pending = plans
  while (pending.length > 0) {
    const done = await wait(pending, { numReturns: 1 })
    pending = done.pending
    for (const plan of done.ready) {
      const i = sourceOf.get(plan.id) as number
      for (const s of await get(plan)) samples.push(processSample.remote(i, s, sources[i], scale))
    }
  }
  // Results are gathered in chunks as they finish, so that little is left to do at the end.
  const groups: number[][] = Array.from({ length: GROUPS }, () => [])
  const chunks = Array.from({ length: Math.ceil(samples.length / 32) }, (_, c) =>
    samples.slice(c * 32, c * 32 + 32),
  )
  await Promise.all(
    chunks.map(async (chunk) => {
      for (const rows of await get(chunk)) for (const [key, value] of rows) groups[key]?.push(value)
    }),
  )
  const answer = await get(groups.map((values, key) => compile.remote(key, values, scale)))
  const lines = answer.map((r) => `${r.key},${r.count},${r.sum}\n`).join('')
  return {
    answer,
    answer_sha: createHash('sha256').update(lines).digest('hex').slice(0, 16),
    count: answer.reduce((n, r) => n + r.count, 0),
    prepares: sources.length,
  }
}
