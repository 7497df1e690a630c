/**
 * The object store of a real `magpie start` process, pushed past its memory
 * and its disk: nothing is lost, memory stays bounded, freed and expired ids
 * are gone, and short-lived nested objects do not pile up.
 */
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { type PlatformProcess, startPlatformProcess } from '../bench/lib/platform-process.ts'
import type { NodeStats } from '../node/node.ts'
import { functionsWithFixtures } from './helpers.ts'

const MiB = 1024 * 1024
const functionsDir = functionsWithFixtures()
const running: PlatformProcess[] = []
const folders: string[] = [functionsDir]

afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop()))
})
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true })
})

async function start(...args: string[]): Promise<PlatformProcess & { state: string }> {
  const state = mkdtempSync(join(tmpdir(), 'magpie-state-'))
  folders.push(state)
  const platform = await startPlatformProcess(['--functions', functionsDir, '--state', state, ...args])
  running.push(platform)
  return { ...platform, state }
}

/** `size` bytes that differ for every `seed` (xorshift). */
function payload(seed: number, size: number): Buffer {
  const buffer = Buffer.allocUnsafe(size)
  let x = ((seed + 1) * 2654435761) >>> 0 || 1
  for (let offset = 0; offset + 4 <= size; offset += 4) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    buffer.writeUInt32LE(x >>> 0, offset)
  }
  return buffer
}

const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

async function put(
  url: string,
  body: Uint8Array,
  query = '',
  type = 'application/octet-stream',
): Promise<Response> {
  return fetch(`${url}/v1/objects${query}`, {
    method: 'POST',
    headers: { 'content-type': type },
    body: body as Uint8Array<ArrayBuffer>,
  })
}

/** Runs `work` over 0..count-1, `width` at a time. */
async function pool(count: number, width: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) await work(next++)
    }),
  )
}

/** Peak and current resident memory of a process, in bytes. */
function memoryOf(pid: number): { peak: number; now: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1]) * 1024
  return { peak: kib('VmHWM'), now: kib('VmRSS') }
}

async function objectStats(url: string): Promise<NodeStats['objects']> {
  const nodes = (await (await fetch(`${url}/v1/nodes`)).json()) as NodeStats[]
  return nodes[0]?.objects as NodeStats['objects']
}

describe('object store under pressure', () => {
  it('takes 512 MiB of live objects in a 64 MiB store and gives every one back byte-exact, in bounded memory', async () => {
    const platform = await start('--object-store-memory', '64MiB', '--cpus', '2')
    const pid = platform.child.pid as number
    const count = 512
    const ids: string[] = []
    const digests: string[] = []
    await pool(count, 4, async (i) => {
      // Bytes and JSON in turn.
      const bytes = payload(i, i % 2 ? MiB : MiB / 2)
      const body = i % 2 ? bytes : Buffer.from(JSON.stringify({ i, hex: bytes.toString('hex') }))
      digests[i] = sha(body)
      const response = await put(
        platform.url,
        body,
        '',
        i % 2 ? 'application/octet-stream' : 'application/json',
      )
      expect(response.status).toBe(201)
      ids[i] = ((await response.json()) as { id: string }).id
    })
    const stats = await objectStats(platform.url)
    expect(stats.bytes).toBeLessThanOrEqual(64 * MiB)
    expect(stats.spilledBytes).toBeGreaterThanOrEqual(count * MiB - 64 * MiB)
    const metrics = await (await fetch(`${platform.url}/metrics`)).text()
    expect(metrics).toMatch(/magpie_object_spilled_bytes\{node="local"\} [1-9]/)

    await pool(count, 4, async (i) => {
      const response = await fetch(`${platform.url}/v1/objects/${ids[i]}`)
      expect(response.status).toBe(200)
      expect(sha(new Uint8Array(await response.arrayBuffer()))).toBe(digests[i])
    })
    const after = await objectStats(platform.url)
    expect(after.bytes).toBeLessThanOrEqual(64 * MiB)
    const { peak } = memoryOf(pid)
    console.log(`peak resident memory ${Math.round(peak / MiB)} MiB for ${count} MiB of objects`)
    expect(peak).toBeLessThan((64 + 200) * MiB)
  }, 120_000)

  it('takes objects bigger than its memory straight to disk, and streams them back, in bounded memory', async () => {
    const platform = await start('--object-store-memory', '64MiB', '--cpus', '1')
    const size = 60 * MiB
    const stored: Array<{ id: string; digest: string }> = []
    for (let i = 0; i < 3; i++) {
      const body = payload(100 + i, size)
      const response = await put(platform.url, body)
      expect(response.status).toBe(201)
      stored.push({ id: ((await response.json()) as { id: string }).id, digest: sha(body) })
    }
    for (const { id, digest } of stored) {
      const response = await fetch(`${platform.url}/v1/objects/${id}`)
      expect(response.status).toBe(200)
      expect(sha(new Uint8Array(await response.arrayBuffer()))).toBe(digest)
    }
    // A function takes one as its argument: read back into shared memory for it.
    const call = await fetch(`${platform.url}/v1/functions/byte-sum/invoke?wait=30`, {
      method: 'POST',
      body: JSON.stringify([{ $ref: stored[0]?.id }, 0]),
    })
    expect(call.status).toBe(200)
    const { peak } = memoryOf(platform.child.pid as number)
    console.log(`peak resident memory ${Math.round(peak / MiB)} MiB for 3 objects of ${size / MiB} MiB`)
    expect(peak).toBeLessThan((64 + 200) * MiB)
  }, 120_000)

  it('answers 507 once memory and spill space are full, and keeps every earlier object', async () => {
    const platform = await start('--object-store-memory', '8MiB', '--spill-limit', '16MiB', '--cpus', '1')
    const stored: Array<{ id: string; digest: string }> = []
    let full: Response | undefined
    for (let i = 0; i < 64 && !full; i++) {
      const body = payload(i, MiB)
      const response = await put(platform.url, body)
      if (response.status === 201) {
        stored.push({ id: ((await response.json()) as { id: string }).id, digest: sha(body) })
      } else {
        full = response
      }
    }
    expect(full?.status).toBe(507)
    expect(((await full?.json()) as { error?: { code: string } } | undefined)?.error?.code).toBe(
      'OBJECT_STORE_FULL',
    )
    expect(stored.length).toBeGreaterThanOrEqual(20)
    // A result that does not fit fails its call the same way.
    const call = await fetch(`${platform.url}/v1/functions/make-bytes/invoke?wait=30`, {
      method: 'POST',
      body: JSON.stringify([4 * MiB, 7]),
    })
    expect(call.status).toBe(507)
    expect(((await call.json()) as { error: { code: string } }).error.code).toBe('OBJECT_STORE_FULL')
    for (const { id, digest } of stored) {
      const response = await fetch(`${platform.url}/v1/objects/${id}`)
      expect(response.status).toBe(200)
      expect(sha(new Uint8Array(await response.arrayBuffer()))).toBe(digest)
    }
    // Freeing makes room again.
    for (const { id } of stored.slice(0, 8)) {
      expect((await fetch(`${platform.url}/v1/objects/${id}`, { method: 'DELETE' })).status).toBe(204)
    }
    expect((await put(platform.url, payload(99, MiB))).status).toBe(201)
  }, 60_000)

  it('answers 507 when the disk itself is full (a 24 MiB tmpfs as --state, no --spill-limit)', async () => {
    // Needs root for mount, as CI has.
    const disk = mkdtempSync(join(tmpdir(), 'magpie-small-disk-'))
    folders.push(disk)
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', disk])
    try {
      const platform = await startPlatformProcess([
        '--functions',
        functionsDir,
        '--state',
        disk,
        '--object-store-memory',
        '8MiB',
        '--cpus',
        '1',
      ])
      running.push(platform)
      const stored: Array<{ id: string; digest: string }> = []
      let refused: Response | undefined
      for (let i = 0; i < 64 && !refused; i++) {
        // 600 KiB: big enough for a file of its own, small enough to pass through memory.
        const body = payload(200 + i, 600 * 1024)
        const response = await put(platform.url, body)
        if (response.status === 201)
          stored.push({ id: ((await response.json()) as { id: string }).id, digest: sha(body) })
        else refused = response
      }
      expect(refused?.status).toBe(507)
      expect(stored.length).toBeGreaterThan(40)
      for (const { id, digest } of stored) {
        const response = await fetch(`${platform.url}/v1/objects/${id}`)
        expect(response.status).toBe(200)
        expect(sha(new Uint8Array(await response.arrayBuffer()))).toBe(digest)
      }
      await platform.stop()
    } finally {
      execFileSync('umount', ['-l', disk])
    }
  }, 60_000)

  it('answers 404 for freed and expired ids, and keeps an object for its ttlS after it was last read', async () => {
    const platform = await start('--cpus', '1')
    const freed = (await (await put(platform.url, payload(1, 1024))).json()) as { id: string }
    expect((await fetch(`${platform.url}/v1/objects/${freed.id}`, { method: 'DELETE' })).status).toBe(204)
    const gone = await fetch(`${platform.url}/v1/objects/${freed.id}`)
    expect(gone.status).toBe(404)
    expect(((await gone.json()) as { error: { code: string } }).error.code).toBe('OBJECT_NOT_FOUND')

    const short = (await (await put(platform.url, payload(2, 1024), '?ttlS=1.5')).json()) as { id: string }
    const call = await fetch(`${platform.url}/v1/functions/square/invoke?wait=10`, {
      method: 'POST',
      body: JSON.stringify({ args: [12], options: { ttlS: 1.5 } }),
    })
    expect(await call.text()).toBe('144')
    const result = call.headers.get('x-magpie-object-id') as string
    await new Promise((resolve) => setTimeout(resolve, 1000))
    expect((await fetch(`${platform.url}/v1/objects/${result}`)).status).toBe(200) // read again: TTL from now
    await new Promise((resolve) => setTimeout(resolve, 1000))
    expect((await fetch(`${platform.url}/v1/objects/${short.id}`)).status).toBe(404)
    expect((await fetch(`${platform.url}/v1/objects/${result}`)).status).toBe(200)
    await new Promise((resolve) => setTimeout(resolve, 2000))
    expect((await fetch(`${platform.url}/v1/objects/${result}`)).status).toBe(404)
  }, 30_000)

  it('frees 1 GiB of short-lived nested objects as it goes, leaving the store near empty', async () => {
    const platform = await start('--object-store-memory', '64MiB', '--cpus', '2')
    const response = await fetch(`${platform.url}/v1/functions/churn/invoke?wait=60`, {
      method: 'POST',
      body: JSON.stringify([1024, MiB]),
    })
    expect(response.status).toBe(200)
    let sum = 0
    for (let i = 0; i < 1024; i++) sum += i % 251
    expect(await response.json()).toBe(sum)
    let stats = await objectStats(platform.url)
    for (let tries = 0; tries < 50 && stats.bytes + stats.spilledBytes > 2 * MiB; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      stats = await objectStats(platform.url)
    }
    console.log(`after 1 GiB of nested objects: ${JSON.stringify(stats)}`)
    expect(stats.bytes + stats.spilledBytes).toBeLessThan(2 * MiB)
    expect(stats.count).toBeLessThan(10)
    // Memory pressure made the workers let go early: most of it never reached the disk.
    expect(stats.spills.bytes).toBeLessThan(256 * MiB)
  }, 120_000)
})
