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
import { type HeadFunctions, headRoutes } from '../cluster/head/routes.ts'
import { emptySnapshot, isRedisUrl, openStateStore } from '../cluster/head/state/store.ts'
import { isReachableUrl } from '../cluster/protocol.ts'
import { headSecret, writeJoinCommand } from '../cluster/secret.ts'
import type { AdmissionLimits } from '../node/admission.ts'
import { listen } from '../node/http/listen.ts'
import { createGateway } from './app.ts'
import { LOOPBACK } from './platform.ts'
import { type FunctionRecord, FunctionRegistry } from './registry/registry.ts'
import { SecretStore } from './secrets.ts'

export interface HeadOptions {
  /** A folder of functions deployed at start (none: only those kept in the state, and deploys). */
  functionsDir?: string | undefined
  port?: number
  host?: string
  token?: string | undefined
  /** Serve /metrics without the token. */
  metricsPublic?: boolean | undefined
  /** Origins whose pages may call the API (`--cors`). */
  cors?: readonly string[] | undefined
  /** Shared with the nodes: given, else kept in the state folder from an earlier start, else made up. */
  secret?: string | undefined
  /**
   * Where the head keeps what outlives it (its secret, functions, the calls
   * and objects it owns): a folder, or a `redis://` URL. Without it, nothing
   * outlives the head (its secret and join command go to a temporary folder).
   */
  stateDir?: string | undefined
  /** The URL nodes use to reach this head, for the join command (default: where it listens). */
  advertiseUrl?: string | undefined
  /** Bounds on calls in flight in the cluster (`--max-queued`, `--max-queued-bytes`; defaults from memory). */
  admission?: AdmissionLimits | undefined
  /** A node silent this long is dead (default 5000 ms). */
  deadAfterMs?: number
  /** Largest request body in bytes. */
  maxBodyBytes?: number
  /** Versions kept of each function (`--keep-versions`, default 5). */
  keepVersions?: number | undefined
  /** Token deploys and secrets need, if set (`--admin-token`). */
  adminToken?: string | undefined
  /** Largest bundle a deploy takes, in bytes (`--max-bundle`). */
  maxBundleBytes?: number | undefined
}

/** Where a head listening on every interface can be reached: its first external IPv4 address. */
function externalAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const info of list ?? []) if (info.family === 'IPv4' && !info.internal) return info.address
  }
  return '127.0.0.1'
}

/** The registry as the head's routes serve it to nodes. */
function headFunctions(functions: FunctionRegistry): HeadFunctions {
  const entryOf = (r: FunctionRecord) => ({
    name: r.name,
    ref: r.ref,
    kind: r.kind,
    config: r.config,
    env: r.env ?? {},
  })
  return {
    get revision() {
      return functions.revision
    },
    list: () => functions.list().map(entryOf),
    async code(ref) {
      const record = functions.get(ref)
      const code = record && (await functions.code(record.ref))
      return record && code !== undefined ? { ...entryOf(record), code } : undefined
    },
  }
}

/** A node silent this long is dead, by default. */
const DEAD_AFTER_MS = 5000

export async function startHead(options: HeadOptions) {
  const host = options.host ?? '127.0.0.1'
  if (!LOOPBACK.has(host) && !options.token) {
    throw new Error(
      `refusing to listen on ${host} without a token: set --token or MAGPIE_TOKEN, or use 127.0.0.1`,
    )
  }
  const where = options.stateDir
  const inFolder = where !== undefined && !isRedisUrl(where)
  const tempDir = inFolder ? undefined : await mkdtemp(join(tmpdir(), 'magpie-head-'))
  // Local files (the secret file for nodes on this host, bundles, spill) go to the state folder if there is one.
  const stateDir = inFolder ? where : (tempDir as string)
  const state = where === undefined ? undefined : openStateStore(where)
  const kept = state ? await state.load() : emptySnapshot()
  const { secret, file: secretFile } = await headSecret(stateDir, options.secret ?? kept.meta.get('secret'))
  state?.set('meta', 'secret', secret)
  const secrets = new SecretStore(
    state && {
      set: (name, value) => state.set('secrets', name, value),
      delete: (name) => state.delete('secrets', name),
    },
  )
  secrets.restore(kept.secrets)
  const functions = new FunctionRegistry({
    bundleDir: join(stateDir, 'bundles'),
    secrets,
    keepVersions: options.keepVersions,
    keeper: state && {
      set: (key, value) => state.set('functions', key, value),
      delete: (key) => state.delete('functions', key),
    },
  })
  await functions.restore(kept.functions)
  if (options.functionsDir !== undefined) await functions.deployAll(options.functionsDir)
  const client = new InternalClient(secret)
  const deadAfterMs = options.deadAfterMs ?? DEAD_AFTER_MS
  const registry = new NodeRegistry({
    deadAfterMs,
    onDead: (node) => backend.nodeDied(node),
    onJoin: (node) => backend.joined(node),
  })
  const backend = clusterBackend({
    registry,
    client,
    config: (fn) => functions.get(fn)?.config,
    spillDir: join(stateDir, 'spill', 'head'),
    admission: options.admission,
    state,
  })
  const restored = backend.restore(kept, deadAfterMs)
  await state?.flushed()
  const gateway = createGateway({
    backend,
    functions,
    secrets,
    token: options.token,
    adminToken: options.adminToken,
    maxBundleBytes: options.maxBundleBytes,
    metricsPublic: options.metricsPublic,
    cors: options.cors,
    internal: headRoutes({ registry, backend, client, secret, functions: headFunctions(functions) }),
    ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
  })
  const server = await listen(gateway.app.fetch, options.port ?? 8080, host, gateway.fast)
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
    /** The deployed functions (for `--watch`). */
    functions,
    /** What was served again from the state of an earlier run. */
    restored,
    close(): Promise<void> {
      closed ??= (async () => {
        registry.close()
        await server.close()
        backend.close()
        await state?.close()
        if (tempDir) await rm(tempDir, { recursive: true, force: true })
      })()
      return closed
    },
  }
}

export type Head = Awaited<ReturnType<typeof startHead>>
