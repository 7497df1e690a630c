/**
 * Cancel across nodes: a call stolen by another node is cancelled where it
 * runs now, and a nested tree whose calls were stolen goes with its root.
 */
import { once } from 'node:events'
import { rmSync } from 'node:fs'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import {
  type Spawned,
  type SpawnedHead,
  spawnHead,
  spawnNode,
  stopSpawnedAfterAll,
  until,
} from './cluster-helpers.ts'
import { functionsWithFixtures } from './helpers.ts'

stopSpawnedAfterAll()
const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

interface NodeRow {
  id: string
  state: string
  running: number
  queued: number
  steals: { in: number; out: number }
}

async function nodes(head: SpawnedHead): Promise<NodeRow[]> {
  return (await (await fetch(`${head.url}/v1/nodes`)).json()) as NodeRow[]
}

async function invoke(head: SpawnedHead, fn: string, args: unknown[]): Promise<string> {
  const res = await fetch(`${head.url}/v1/functions/${fn}/invoke`, {
    method: 'POST',
    body: JSON.stringify({ args }),
  })
  return ((await res.json()) as { id: string }).id
}

async function status(head: SpawnedHead, id: string): Promise<{ status: number; code?: string }> {
  const res = await fetch(`${head.url}/v1/objects/${id}`)
  const body = (await res.json()) as { error?: { code: string } }
  return { status: res.status, ...(body.error ? { code: body.error.code } : {}) }
}

/**
 * A head and a first node with one CPU; `second()` starts another, which
 * steals from the first. Each test's cluster is stopped at its end, so that
 * calls it left running take no CPU from the next.
 */
const running: Spawned[] = []
afterEach(async () => {
  await Promise.all(
    running.splice(0).map(async ({ child }) => {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = once(child, 'exit')
      child.kill('SIGKILL')
      await exited
    }),
  )
})

async function cluster() {
  const functions = functionsWithFixtures()
  dirs.push(functions)
  const head = await spawnHead([
    '--port',
    '0',
    '--secret',
    'a-test-secret-of-some-length',
    '--functions',
    functions,
  ])
  const first = await spawnNode({
    head: head.url,
    secret: 'a-test-secret-of-some-length',
  })
  running.push(head, first)
  return {
    head,
    first,
    second: async () => {
      const node = await spawnNode({ head: head.url, secret: 'a-test-secret-of-some-length' })
      running.push(node)
      return node
    },
  }
}

describe('cancel across nodes', () => {
  it('cancels a call stolen by another node where it runs now, and leaves the others', async () => {
    const { head, first, second } = await cluster()
    // All placed on the only node: one runs, one is handed to its thread ahead, the rest wait.
    const ids: string[] = []
    for (let i = 0; i < 5; i++) ids.push(await invoke(head, 'busy-wait', [15_000]))
    const thief = await second()
    let stolen: string | undefined
    await until(async () => {
      for (const id of ids) {
        const meta = (await (await fetch(`${head.url}/v1/objects/${id}/meta`)).json()) as { node: string }
        if (meta.node === thief.id) stolen = id
      }
      const row = (await nodes(head)).find((n) => n.id === thief.id)
      return stolen !== undefined && (row?.running ?? 0) > 0
    }, 20_000)
    // Recent calls list it once, where it runs now; the others where they were placed.
    const listed = (await (await fetch(`${head.url}/v1/tasks?function=busy-wait`)).json()) as Array<{
      id: string
      node: string
      state: string
    }>
    expect(listed.map((t) => t.id).sort()).toEqual([...ids].sort())
    expect(listed.find((t) => t.id === stolen)).toMatchObject({ node: thief.id, state: 'running' })
    const started = Date.now()
    const res = await fetch(`${head.url}/v1/objects/${stolen}/cancel`, {
      method: 'POST',
      body: '{"force":true}',
    })
    expect(res.status).toBe(202)
    expect(await status(head, stolen as string)).toEqual({ status: 409, code: 'TASK_CANCELLED' })
    // The thief's thread is freed at once, not in 15 s: it takes the next call.
    await until(async () => {
      const row = (await nodes(head)).find((n) => n.id === thief.id)
      return row !== undefined && row.steals.in >= 2
    }, 10_000)
    expect(Date.now() - started).toBeLessThan(10_000)
    for (const id of ids.filter((id) => id !== stolen)) {
      expect((await status(head, id)).status).toBe(202)
    }
    expect(first.id).not.toBe(thief.id)
  }, 60_000)

  it('cancels a nested tree whose calls were stolen, with its root', async () => {
    const { head, second } = await cluster()
    // Calls that wait (one at a time per thread), not burn: the tree is what is cancelled here.
    const root = await invoke(head, 'fan-out', [6, 'wait-abort', 15_000])
    const thief = await second()
    await until(async () => ((await nodes(head)).find((n) => n.id === thief.id)?.running ?? 0) > 0, 20_000)
    const res = await fetch(`${head.url}/v1/objects/${root}/cancel`, {
      method: 'POST',
      body: '{"force":true}',
    })
    expect(res.status).toBe(202)
    expect(await status(head, root)).toEqual({ status: 409, code: 'TASK_CANCELLED' })
    // Every call of the tree, on both nodes, is gone long before the 15 s they would run.
    await until(async () => (await nodes(head)).every((n) => n.running === 0 && n.queued === 0), 10_000)
  }, 60_000)
})
