/** Starts real platforms for tests, on free ports, and stops them afterwards. */

import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import { startHead } from '../gateway/head.ts'
import { type Platform, type PlatformOptions, startPlatform } from '../gateway/platform.ts'
import { type Client, connect } from '../sdk/index.ts'
import { spawnNode } from './cluster-helpers.ts'

export const ROOT = resolve(import.meta.dirname, '..')

/** A folder holding the repository's functions plus the test fixtures. */
export function functionsWithFixtures(): string {
  const dir = mkdtempSync(join(tmpdir(), 'magpie-fns-'))
  cpSync(join(ROOT, 'functions'), dir, { recursive: true })
  cpSync(join(ROOT, 'test/fixtures/functions'), dir, { recursive: true })
  return dir
}

/**
 * Starts a platform for the whole file; `ctx.url` is set once it listens.
 * With MAGPIE_TEST_CLUSTER=N in the environment it is a head with N node
 * processes instead, so that the same tests check the cluster against the contract.
 */
export function usePlatform(options: Partial<PlatformOptions> = {}): { url: string; platform: Platform } {
  const ctx = { url: '', platform: undefined as unknown as Platform }
  let dir = ''
  beforeAll(async () => {
    dir = functionsWithFixtures()
    const cluster = Number(process.env.MAGPIE_TEST_CLUSTER ?? 0)
    ctx.platform =
      cluster > 0
        ? await startTestCluster(dir, cluster, options)
        : await startPlatform({ functionsDir: dir, port: 0, cpus: 2, ...options })
    ctx.url = ctx.platform.url
  }, 60_000)
  afterAll(async () => {
    await ctx.platform?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })
  return ctx
}

async function startTestCluster(
  dir: string,
  count: number,
  options: Partial<PlatformOptions>,
): Promise<Platform> {
  const head = await startHead({
    functionsDir: dir,
    port: 0,
    token: options.token,
    ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
    admission: options.admission,
  })
  const nodes = await Promise.all(
    Array.from({ length: count }, () =>
      spawnNode({
        head: head.url,
        secret: head.secret,
        args: [
          '--cpus',
          String(options.cpus ?? 1),
          ...(options.logRetention
            ? ['--log-retention', `${options.logRetention.bytes},${options.logRetention.ageMs}ms`]
            : []),
        ],
        echo: true,
      }),
    ),
  )
  return {
    url: head.url,
    port: head.port,
    async close() {
      for (const { child } of nodes) if (child.exitCode === null) child.kill('SIGKILL')
      await head.close()
    },
  }
}

/**
 * An SDK client for the whole file, connected once the platform listens and
 * closed afterwards. It is a stand-in until then, so that files can hold it in a const.
 */
export function useClient(ctx: { url: string }): Client {
  let client: Client | undefined
  beforeAll(() => {
    client = connect(ctx.url)
  })
  afterAll(async () => {
    await client?.close()
  })
  return new Proxy({} as Client, {
    get(_, key) {
      if (!client) throw new Error('the client exists once the platform has started')
      const value = Reflect.get(client, key, client) as unknown
      return typeof value === 'function' ? value.bind(client) : value
    },
  })
}

export function tempFile(name: string): string {
  return join(mkdtempSync(join(tmpdir(), 'magpie-test-')), name)
}
