/**
 * A head: the gateway alone, for nodes that join it (`magpie start --head`).
 * It owns what clients make, places calls on nodes and serves the public API;
 * the nodes do the work and hold the data. Its cluster secret lives in its
 * state folder (mode 0600), so that a head started again on the same folder
 * takes its nodes back.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { networkInterfaces, tmpdir } from 'node:os'
import { join } from 'node:path'
import { InternalClient } from '../cluster/client.ts'
import { clusterBackend } from '../cluster/head/backend.ts'
import { NodeRegistry } from '../cluster/head/registry.ts'
import { headRoutes } from '../cluster/head/routes.ts'
import { isReachableUrl } from '../cluster/protocol.ts'
import { headSecret, writeJoinCommand } from '../cluster/secret.ts'
import type { AdmissionLimits } from '../node/admission.ts'
import { listen } from '../node/http/listen.ts'
import { createGatewayApp } from './app.ts'
import { LOOPBACK } from './platform.ts'
import { FunctionRegistry } from './registry/registry.ts'

export interface HeadOptions {
  functionsDir: string
  port?: number
  host?: string
  token?: string | undefined
  /** Serve /metrics without the token. */
  metricsPublic?: boolean | undefined
  /** Shared with the nodes: given, else kept in the state folder from an earlier start, else made up. */
  secret?: string | undefined
  /** Where the head keeps what outlives it (its secret, the join command); default a temporary folder. */
  stateDir?: string | undefined
  /** The URL nodes use to reach this head, for the join command (default: where it listens). */
  advertiseUrl?: string | undefined
  /** Bounds on calls in flight in the cluster (`--max-queued`, `--max-queued-bytes`; defaults from memory). */
  admission?: AdmissionLimits | undefined
  /** A node silent this long is dead (default 5000 ms). */
  deadAfterMs?: number
  /** Largest request body in bytes. */
  maxBodyBytes?: number
}

/** Where a head listening on every interface can be reached: its first external IPv4 address. */
function externalAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const info of list ?? []) if (info.family === 'IPv4' && !info.internal) return info.address
  }
  return '127.0.0.1'
}

export async function startHead(options: HeadOptions) {
  const host = options.host ?? '127.0.0.1'
  if (!LOOPBACK.has(host) && !options.token) {
    throw new Error(
      `refusing to listen on ${host} without a token: set --token or MAGPIE_TOKEN, or use 127.0.0.1`,
    )
  }
  const tempDir = options.stateDir === undefined ? await mkdtemp(join(tmpdir(), 'magpie-head-')) : undefined
  const stateDir = options.stateDir ?? (tempDir as string)
  const { secret, file: secretFile } = await headSecret(stateDir, options.secret)
  const functions = new FunctionRegistry({ bundleDir: join(stateDir, 'bundles') })
  await functions.deployAll(options.functionsDir)
  const client = new InternalClient(secret)
  const registry = new NodeRegistry({
    ...(options.deadAfterMs === undefined ? {} : { deadAfterMs: options.deadAfterMs }),
    onDead: (node) => backend.nodeDied(node),
  })
  const backend = clusterBackend({
    registry,
    client,
    config: (fn) => functions.get(fn)?.config,
    spillDir: join(stateDir, 'spill', 'head'),
    admission: options.admission,
  })
  const app = createGatewayApp({
    backend,
    functions,
    token: options.token,
    metricsPublic: options.metricsPublic,
    internal: headRoutes({ registry, backend, client, secret }),
    ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
  })
  const server = await listen(app.fetch, options.port ?? 8080, host)
  const url =
    options.advertiseUrl?.replace(/\/+$/, '') ??
    (isReachableUrl(server.url) ? server.url : `http://${externalAddress()}:${server.port}`)
  const joinCommandFile = await writeJoinCommand(stateDir, url, secretFile)
  let closed: Promise<void> | undefined
  return {
    /** Where clients and nodes reach this head. */
    url,
    port: server.port,
    secret,
    /** The file that holds the cluster secret (mode 0600). */
    secretFile,
    /** The file that holds the command that joins a node (mode 0600). */
    joinCommandFile,
    registry,
    close(): Promise<void> {
      closed ??= (async () => {
        registry.close()
        await server.close()
        backend.close()
        if (tempDir) await rm(tempDir, { recursive: true, force: true })
      })()
      return closed
    },
  }
}

export type Head = Awaited<ReturnType<typeof startHead>>
