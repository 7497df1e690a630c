/**
 * The embedded platform: a gateway and one local node in this process,
 * serving every function folder of a directory. `magpie start` runs this.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AdmissionLimits } from '../node/admission.ts'
import { localBackend } from '../node/backend.ts'
import { listen } from '../node/http/listen.ts'
import { LocalNode } from '../node/node.ts'
import { createGateway } from './app.ts'
import { FunctionRegistry } from './registry/registry.ts'
import { SecretStore } from './secrets.ts'

export interface PlatformOptions {
  /** Folder of function folders to serve. */
  /** A folder of functions deployed at start (none: only deploys). */
  functionsDir?: string | undefined
  /** Port to listen on; 0 picks a free one (default 8080). */
  port?: number
  /** Address to listen on (default 127.0.0.1; any other needs a token). */
  host?: string
  /** Worker threads (default: one per core). */
  cpus?: number
  /** Token every /v1 call (and /metrics) must carry. */
  token?: string | undefined
  /** Serve /metrics without the token. */
  metricsPublic?: boolean | undefined
  /** Origins whose pages may call the API (`--cors`). */
  cors?: readonly string[] | undefined
  /** Bytes of object values the node keeps in memory (default 30% of RAM). */
  objectStoreMemory?: number
  /** The longest any call may run, in ms (`--max-call-time`). */
  maxCallTimeMs?: number | undefined
  /** The most heap a worker thread may use, in MiB (`--worker-memory`). */
  workerMemoryMb?: number | undefined
  /** Threads for actors, at most (`--actor-threads`). */
  actorThreads?: number | undefined
  /** What calls wrote, kept for their logs (`--log-retention`). */
  logRetention?: { bytes: number; ageMs: number } | undefined
  /** Bytes one call may write to stdout and stderr (`--max-call-output`). */
  maxCallOutputBytes?: number | undefined
  /** Bounds on calls waiting (`--max-queued`, `--max-queued-bytes`; defaults from memory). */
  admission?: AdmissionLimits | undefined
  /** Bytes of values spilled to disk allowed (default: what the disk takes). */
  spillLimit?: number
  /** Folder for state that outlives memory: values spill to its spill/ (default: a temporary folder). */
  stateDir?: string | undefined
  /** Largest request body in bytes. */
  maxBodyBytes?: number
  /** Token deploys and secrets need, if set (`--admin-token`). */
  adminToken?: string | undefined
  /** Largest bundle a deploy takes, in bytes (`--max-bundle`). */
  maxBundleBytes?: number | undefined
  /** Versions kept of each function (`--keep-versions`). */
  keepVersions?: number | undefined
}

export interface Platform {
  url: string
  port: number
  /** The deployed functions (for `--watch`). */
  functions?: FunctionRegistry
  close(): Promise<void>
}

export const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1'])

export async function startPlatform(options: PlatformOptions): Promise<Platform> {
  const host = options.host ?? '127.0.0.1'
  if (!LOOPBACK.has(host) && !options.token) {
    throw new Error(
      `refusing to listen on ${host} without a token: set --token or MAGPIE_TOKEN, or use 127.0.0.1`,
    )
  }
  const tempDir = await mkdtemp(join(tmpdir(), 'magpie-'))
  // The embedded platform keeps its secrets in memory only.
  const secrets = new SecretStore()
  const functions = new FunctionRegistry({
    bundleDir: join(tempDir, 'bundles'),
    secrets,
    keepVersions: options.keepVersions,
  })
  if (options.functionsDir !== undefined) await functions.deployAll(options.functionsDir)
  const node = new LocalNode({
    functions,
    ...(options.cpus === undefined ? {} : { cpus: options.cpus }),
    ...(options.objectStoreMemory === undefined ? {} : { objectStoreMemory: options.objectStoreMemory }),
    maxCallTimeMs: options.maxCallTimeMs,
    workerMemoryMb: options.workerMemoryMb,
    actorThreads: options.actorThreads,
    logRetention: options.logRetention,
    maxCallOutputBytes: options.maxCallOutputBytes,
    admission: options.admission,
    ...(options.spillLimit === undefined ? {} : { spillLimit: options.spillLimit }),
    spillDir: join(options.stateDir ?? tempDir, 'spill', 'local'),
  })
  let url = ''
  const backend = localBackend(node, () => url)
  const gateway = createGateway({
    backend,
    functions,
    secrets,
    token: options.token,
    adminToken: options.adminToken,
    maxBundleBytes: options.maxBundleBytes,
    metricsPublic: options.metricsPublic,
    cors: options.cors,
    ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
  })
  const server = await listen(gateway.app.fetch, options.port ?? 8080, host, gateway.fast)
  await node.ready()
  url = server.url
  let closed: Promise<void> | undefined
  return {
    url,
    port: server.port,
    functions,
    close() {
      closed ??= (async () => {
        await server.close()
        await node.close()
        await rm(tempDir, { recursive: true, force: true })
      })()
      return closed
    },
  }
}
