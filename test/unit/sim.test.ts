/**
 * The scheduler simulator (bench/sim): the seed pipeline runs to its end
 * through the real scheduler and thief on simulated time, the same seed
 * gives the same run, and the figures it reports hold together.
 */
import { describe, expect, it } from 'vitest'
import { SimClock } from '../../bench/sim/clock.ts'
import { runPipeline, SimCluster, type SimParams } from '../../bench/sim/cluster.ts'
import { totalWorkMs } from '../../functions/_lib/seed.ts'

const base: SimParams = {
  nodes: 1,
  workersPerNode: 2,
  cores: 2,
  copies: 1,
  scale: 1,
  latencyMs: 1,
  bandwidthMBps: 400,
  callOverheadMs: 1,
  stolenCallOverheadMs: 1,
}

async function run(params: SimParams, seed = 1) {
  const clock = new SimClock(seed)
  const cluster = new SimCluster(clock, params)
  const pipeline = runPipeline(cluster)
  await clock.run(pipeline.done)
  cluster.stop()
  return {
    makespan: pipeline.makespan(),
    tasks: cluster.tasks,
    stolen: cluster.stolen,
    moved: cluster.bytesMoved,
  }
}

describe('the simulator', () => {
  it('runs every call of the pipeline on one node, no sooner than its work allows', async () => {
    const { makespan, tasks, stolen } = await run(base)
    expect(tasks).toBe(32 + 32 + 965 + 16)
    expect(stolen).toBe(0)
    // Two cores: the work over two, plus each call's overhead over two, at least.
    expect(makespan).toBeGreaterThan((totalWorkMs(1) + tasks * 1) / 2)
    expect(makespan).toBeLessThan(totalWorkMs(1))
  })

  it('spreads the work over nodes by stealing, moving each source’s data to a node at most once', async () => {
    const { makespan, stolen, moved } = await run({
      ...base,
      nodes: 4,
      workersPerNode: 2,
      cores: 8,
      copies: 4,
    })
    expect(stolen).toBeGreaterThan(0)
    for (const bytes of moved) expect(bytes).toBeLessThanOrEqual(4 * 32 * 2 * 2 ** 20)
    expect(makespan).toBeGreaterThan(totalWorkMs(1) / 2)
  })

  it('models fetching arguments where a call runs: less into the owner’s node', async () => {
    const params = { ...base, nodes: 8, workersPerNode: 2, cores: 16, copies: 8 }
    const queued = await run(params)
    const whereRun = await run({ ...params, argsWhereRun: true })
    expect(Math.max(...whereRun.moved)).toBeLessThan(Math.max(...queued.moved))
  })

  it('gives the same run for the same seed', async () => {
    const params = { ...base, nodes: 3, workersPerNode: 1 }
    expect(await run(params, 7)).toEqual(await run(params, 7))
  })
})
