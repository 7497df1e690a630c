/**
 * A node with a small store behind a head, pushed past its memory through the
 * head: every object comes back byte-exact, the node stays near its bound,
 * and the head, which passes the bytes on both ways, holds none of them whole.
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { spawnHead, spawnNode, stopSpawnedAfterAll } from './cluster-helpers.ts'

const MiB = 1024 * 1024
const state = mkdtempSync(join(tmpdir(), 'magpie-cluster-state-'))
stopSpawnedAfterAll()

afterAll(() => {
  rmSync(state, { recursive: true, force: true })
})

const peakOf = (pid: number) =>
  Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024
const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

it('keeps a joined node within its store and the head out of the way, 384 MiB through a 64 MiB store', async () => {
  const secret = randomBytes(8).toString('hex')
  const head = await spawnHead(['--port', '0', '--secret', secret])
  const node = await spawnNode({
    head: head.url,
    secret,
    args: ['--object-store-memory', '64MiB', '--state', state],
  })
  const sizes = [...Array<number>(128).fill(MiB), ...Array<number>(32).fill(8 * MiB)]
  const stored: Array<{ id: string; digest: string }> = []
  let next = 0
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < sizes.length) {
        const i = next++
        const body = randomBytes(sizes[i] as number)
        const response = await fetch(`${head.url}/v1/objects`, {
          method: 'POST',
          headers: { 'content-type': 'application/octet-stream' },
          body,
        })
        expect(response.status).toBe(201)
        stored[i] = { id: ((await response.json()) as { id: string }).id, digest: sha(body) }
      }
    }),
  )
  next = 0
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < stored.length) {
        const { id, digest } = stored[next++] as { id: string; digest: string }
        const response = await fetch(`${head.url}/v1/objects/${id}`)
        expect(response.status).toBe(200)
        expect(sha(new Uint8Array(await response.arrayBuffer()))).toBe(digest)
      }
    }),
  )
  const nodePeak = peakOf(node.child.pid as number)
  const headPeak = peakOf(head.child.pid as number)
  console.log(
    `peak resident memory: node ${Math.round(nodePeak / MiB)} MiB, head ${Math.round(headPeak / MiB)} MiB`,
  )
  expect(nodePeak).toBeLessThan((64 + 200) * MiB)
  expect(headPeak).toBeLessThan(200 * MiB)
}, 120_000)
