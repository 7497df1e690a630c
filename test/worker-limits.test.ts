/**
 * Limits per worker: --worker-memory (a call past a worker's heap limit
 * fails with WORKER_CRASHED; the node lives on) and --max-call-output.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { WorkerCrashedError } from '../sdk/index.ts'
import { until } from './cluster-helpers.ts'
import { useClient, usePlatform } from './helpers.ts'

const ROOT = resolve(import.meta.dirname, '..')
const BIN = join(ROOT, 'bin/magpie.mjs')
const FIXTURES = join(ROOT, 'test/fixtures/functions')

const ctx = usePlatform({ cpus: 1, workerMemoryMb: 64 })
const mp = useClient(ctx)

describe('a worker memory limit', () => {
  it('fails a call that needs more, and runs the next', async () => {
    const hog = mp.remote<(mb: number) => number>('hog')
    expect(await mp.get(hog.remote(8), { timeout: 30 })).toBe(8)
    const err = await mp
      .get(hog.options({ maxRetries: 0 }).remote(512), { timeout: 60 })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(WorkerCrashedError)
    expect((err as WorkerCrashedError).message).toMatch(/memory/i)
    expect(await mp.get(mp.remote('square').remote(8), { timeout: 30 })).toBe(64)
  }, 90_000)
})

describe('a bound on what a call writes', () => {
  it('drops what one call writes past --max-call-output, says so once, and leaves other calls whole', async () => {
    const child = spawn(
      process.execPath,
      [BIN, 'start', '--port', '0', '--cpus', '1', '--functions', FIXTURES, '--max-call-output', '64KiB'],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk
    })
    child.stderr.on('data', (chunk: Buffer) => {
      out += chunk
    })
    try {
      await until(() => /magpie listening on/.test(out), 30_000)
      const url = /magpie listening on (\S+)/.exec(out)?.[1] as string
      const call = async (kib: number, tag: string) => {
        const res = await fetch(`${url}/v1/functions/chatty/invoke?wait=60`, {
          method: 'POST',
          body: JSON.stringify({ args: [kib, tag] }),
        })
        return res.json()
      }
      // 8 MiB from one call, then 16 KiB from another: both calls succeed.
      expect(await call(8192, 'LOUD')).toBe(8192)
      expect(await call(16, 'QUIET')).toBe(16)
      await until(() => (out.match(/^\[chatty \S+\] QUIET /gm) ?? []).length === 16, 10_000)
      const loud = (out.match(/^\[chatty \S+\] LOUD /gm) ?? []).length
      expect(loud).toBeGreaterThan(50)
      expect(loud).toBeLessThanOrEqual(64)
      expect(out.match(/wrote more than 65536 bytes; the rest is dropped/g)).toHaveLength(1)
    } finally {
      const exited = once(child, 'exit')
      child.kill('SIGKILL')
      await exited
    }
  }, 90_000)
})
