/**
 * A head: the gateway alone, for nodes that join it (`magpie start --head`).
 * It owns what clients make, places calls on nodes and serves the public API;
 * the nodes do the work and hold the data.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { nanoid } from 'nanoid'
import { createGatewayApp } from './app.ts'
import { clusterBackend } from './cluster/cluster-backend.ts'
import { NodeRegistry } from './cluster/registry.ts'
import { listen } from './listen.ts'
import { LOOPBACK } from './platform.ts'
import { FunctionRegistry } from './registry/registry.ts'
import { internalRoutes } from './routes/internal.ts'

export interface HeadOptions {
  functionsDir: string
  port?: number
  host?: string
  token?: string | undefined
  /** Shared with the nodes; made up if not given. */
  secret?: string | undefined
  /** A node silent this long is dead (default 5000 ms). */
  deadAfterMs?: number
  /** Largest request body in bytes. */
  maxBodyBytes?: number
}

export async function startHead(options: HeadOptions) {
  const host = options.host ?? '127.0.0.1'
  if (!LOOPBACK.has(host) && !options.token) {
    throw new Error(
      `refusing to listen on ${host} without a token: set --token or MAGPIE_TOKEN, or use 127.0.0.1`,
    )
  }
  const secret = options.secret ?? nanoid(32)
  const stateDir = await mkdtemp(join(tmpdir(), 'magpie-head-'))
  const functions = new FunctionRegistry({ bundleDir: join(stateDir, 'bundles') })
  await functions.deployAll(options.functionsDir)
  const registry = new NodeRegistry({
    ...(options.deadAfterMs === undefined ? {} : { deadAfterMs: options.deadAfterMs }),
    onDead: (node) => backend.nodeDied(node),
  })
  const backend = clusterBackend({
    registry,
    secret,
    config: (fn) => functions.get(fn)?.config,
    spillDir: join(stateDir, 'spill'),
  })
  const app = createGatewayApp({
    backend,
    functions,
    token: options.token,
    internal: internalRoutes(registry, backend, secret),
    ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
  })
  const server = await listen(app.fetch, options.port ?? 8080, host)
  let closed: Promise<void> | undefined
  return {
    url: server.url,
    port: server.port,
    secret,
    registry,
    close(): Promise<void> {
      closed ??= (async () => {
        registry.close()
        await server.close()
        backend.close()
        await rm(stateDir, { recursive: true, force: true })
      })()
      return closed
    },
  }
}

export type Head = Awaited<ReturnType<typeof startHead>>
