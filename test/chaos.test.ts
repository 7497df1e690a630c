/**
 * Node death under nested work: a head with three one-CPU nodes runs the
 * seed pipeline as a nested call while one node, picked at random, is
 * SIGKILLed at a random moment. Every run must finish, with the workload's
 * answer: calls owned, run or stolen by the dead node are run again by
 * their owners, and whatever waited for them wakes up.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Head, startHead } from '../gateway/head.ts'
import { connect } from '../sdk/index.ts'
import { type SpawnedNode, spawnNode, stopSpawnedAfterAll, until } from './cluster-helpers.ts'
import { ROOT } from './helpers.ts'

const ANSWER_SHA = '72823fb8cecb1d49'
let head: Head
const alive: SpawnedNode[] = []
stopSpawnedAfterAll()

async function topUp(): Promise<void> {
  const more = await Promise.all(
    Array.from({ length: 3 - alive.length }, () => spawnNode({ head: head.url, secret: head.secret })),
  )
  alive.push(...more)
  await until(async () => {
    const list = (await (await fetch(`${head.url}/v1/nodes`)).json()) as Array<{ state: string }>
    return list.filter((n) => n.state === 'alive').length === 3
  })
}

beforeAll(async () => {
  head = await startHead({ functionsDir: `${ROOT}/functions`, port: 0, deadAfterMs: 2000 })
}, 60_000)

afterAll(async () => {
  await head?.close()
})

describe('a node killed under a nested job', () => {
  for (const run of [1, 2, 3, 4, 5]) {
    it(`finishes with the right answer (run ${run})`, async () => {
      await topUp()
      const mp = connect(head.url)
      const started = Date.now()
      const job = mp.remote('seed-pipeline').remote({ scale: 20 })
      const victim = alive.splice(Math.floor(Math.random() * alive.length), 1)[0] as SpawnedNode
      const delay = 200 + Math.round(Math.random() * 1600)
      await new Promise((r) => setTimeout(r, delay))
      victim.child.kill('SIGKILL')
      const report = (await mp.get(job, { timeout: 60 })) as { answer_sha: string }
      console.log(`run ${run}: node killed at ${delay} ms, finished in ${Date.now() - started} ms`)
      expect(report.answer_sha).toBe(ANSWER_SHA)
      await mp.close()
    }, 90_000)
  }
})
