/**
 * Actors on a three-node cluster: placed by their resources, and made again
 * on another node when theirs is SIGKILLed (maxRestarts), or dead without.
 */
import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Head, startHead } from '../gateway/head.ts'
import { ActorDiedError, connect } from '../sdk/index.ts'
import { type SpawnedNode, spawnNode, stopSpawnedAfterAll, until } from './cluster-helpers.ts'
import { functionsWithFixtures } from './helpers.ts'

let head: Head
const nodes: SpawnedNode[] = []
const functionsDir = functionsWithFixtures()
stopSpawnedAfterAll()

beforeAll(async () => {
  head = await startHead({ functionsDir, port: 0, deadAfterMs: 2000 })
  nodes.push(
    ...(await Promise.all(
      [0, 1, 2].map((i) =>
        spawnNode({ head: head.url, secret: head.secret, args: ['--resources', `{"slot${i}":1,"any":1}`] }),
      ),
    )),
  )
}, 60_000)

afterAll(async () => {
  await head?.close()
  rmSync(functionsDir, { recursive: true, force: true })
})

class Counter {
  start: number
  constructor(start = 0) {
    this.start = start
  }
  increment(_by?: number): number {
    return 0
  }
}

async function actorInfo(id: string): Promise<{ node: string; state: string; restarts: number }> {
  return (await (await fetch(`${head.url}/v1/actors/${id}`)).json()) as {
    node: string
    state: string
    restarts: number
  }
}

describe('actors on a cluster', () => {
  it('live on the node their resources choose', async () => {
    const mp = connect(head.url)
    const c = mp
      .actor<typeof Counter>('counter')
      .options({ resources: { slot2: 1 } })
      .remote(0)
    expect(await mp.get(c.increment.remote())).toBe(1)
    expect((await actorInfo(c.id)).node).toBe(nodes[2]?.id)
    await mp.close()
  })

  it('are found by name and called from a function on another node', async () => {
    const mp = connect(head.url)
    const c = mp
      .actor<typeof Counter>('counter')
      .options({ name: 'far-away', resources: { slot0: 1 } })
      .remote(40)
    expect(await mp.get(c.increment.remote())).toBe(41)
    const bump = mp.remote<(name: string) => number>('find-bump').options({ resources: { slot1: 1 } })
    expect(await mp.get(bump.remote('far-away'), { timeout: 30 })).toBe(42)
    await expect(mp.get(bump.remote('nobody-by-that-name'), { timeout: 30 })).rejects.toThrow(/no actor/)
    await mp.close()
  })

  it('come back on another node when theirs is SIGKILLed, with maxRestarts; without, they die', async () => {
    const mp = connect(head.url)
    const kept = mp
      .actor<typeof Counter>('counter')
      .options({ maxRestarts: 1, resources: { any: 1 } })
      .remote(10)
    expect(await mp.get(kept.increment.remote())).toBe(11)
    const where = (await actorInfo(kept.id)).node
    const victim = nodes.find((n) => n.id === where) as SpawnedNode
    // Another actor on the same node, without restarts.
    const lost = mp
      .actor<typeof Counter>('counter')
      .options({ resources: { [`slot${nodes.indexOf(victim)}`]: 1 } })
      .remote(0)
    expect(await mp.get(lost.increment.remote())).toBe(1)
    victim.child.kill('SIGKILL')
    await until(async () => {
      const info = await actorInfo(kept.id)
      return info.node !== where && info.restarts === 1
    }, 20_000)
    // Made again from its constructor's arguments.
    expect(await mp.get(kept.increment.remote(), { timeout: 20 })).toBe(11)
    expect((await actorInfo(kept.id)).state).toBe('alive')
    await expect(mp.get(lost.increment.remote(), { timeout: 20 })).rejects.toBeInstanceOf(ActorDiedError)
    expect((await actorInfo(lost.id)).state).toBe('dead')
    await mp.close()
  }, 60_000)

  it('come back elsewhere with their last checkpoint when their class keeps one', async () => {
    const mp = connect(head.url)
    const alive = nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null)
    const k = mp
      .actor<typeof Counter>('keeper')
      .options({ resources: { any: 1 } })
      .remote()
    expect(await mp.get([1, 2, 3].map(() => k.increment.remote()))).toEqual([1, 2, 3])
    const where = (await actorInfo(k.id)).node
    // The checkpoint of the last call reaches the head.
    await new Promise((r) => setTimeout(r, 500))
    ;(alive.find((n) => n.id === where) as SpawnedNode).child.kill('SIGKILL')
    await until(async () => (await actorInfo(k.id)).node !== where, 20_000)
    expect(await mp.get(k.increment.remote(), { timeout: 20 })).toBe(4)
    await mp.close()
  }, 60_000)
})
