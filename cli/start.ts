/**
 * `magpie start`: the embedded platform (a gateway and one node in this
 * process), a head alone (--head), a node joining a head (--join URL), or a
 * head with N local node processes (--nodes N). Runs until SIGINT or SIGTERM.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { isRedisUrl } from '../cluster/head/state/store.ts'
import { startNodeProcess } from '../cluster/node/node-process.ts'
import { isReachableUrl } from '../cluster/protocol.ts'
import { checkSecret, readSecretFile } from '../cluster/secret.ts'
import { startHead } from '../gateway/head.ts'
import { startPlatform } from '../gateway/platform.ts'
import { stopBundler } from '../gateway/registry/bundle.ts'
import { configureLog, isLogLevel, LOG_LEVELS } from '../node/log.ts'
import { DEFAULT_LOG_RETENTION } from '../node/node.ts'
import { MAX_TIMEOUT_MS } from '../sdk/types.ts'
import { parseBytes, parseLogRetention } from './units.ts'
import { watchFunctions } from './watch.ts'

export interface StartFlags {
  port?: string | undefined
  host?: string | undefined
  cpus?: string | undefined
  functions?: string | undefined
  token?: string | undefined
  head?: boolean | undefined
  join?: string | undefined
  nodes?: string | undefined
  secret?: string | undefined
  secretFile?: string | undefined
  advertiseUrl?: string | undefined
  metricsPublic?: boolean | undefined
  cors?: string[] | undefined
  maxCallTime?: string | undefined
  workerMemory?: string | undefined
  maxCallOutput?: string | undefined
  actorThreads?: string | undefined
  logRetention?: string | undefined
  logLevel?: string | undefined
  maxQueued?: string | undefined
  maxQueuedBytes?: string | undefined
  resources?: string | undefined
  objectStoreMemory?: string | undefined
  state?: string | undefined
  spillLimit?: string | undefined
  maxBody?: string | undefined
  stopGrace?: string | undefined
  watch?: boolean | undefined
  adminToken?: string | undefined
  keepVersions?: string | undefined
  maxBundle?: string | undefined
}

/** How long a stop may drain before the process ends at once, in seconds. */
const DEFAULT_STOP_GRACE_S = 60

/** The flags of a node (its object store, its calls' limits), checked, as node options. */
function storeFlags(flags: StartFlags): {
  objectStoreMemory?: number
  spillLimit?: number
  maxCallTimeMs?: number
  workerMemoryMb?: number
  maxCallOutputBytes?: number
  actorThreads?: number
  logRetention?: { bytes: number; ageMs: number }
} {
  const actorThreads = integerFlag('actor-threads', flags.actorThreads, 1)
  return {
    ...(flags.maxCallOutput === undefined
      ? {}
      : { maxCallOutputBytes: parseBytes('max-call-output', flags.maxCallOutput) }),
    ...(flags.workerMemory === undefined ? {} : { workerMemoryMb: workerMemoryFlag(flags.workerMemory) }),
    ...(actorThreads === undefined ? {} : { actorThreads }),
    ...(flags.logRetention === undefined
      ? {}
      : { logRetention: parseLogRetention(flags.logRetention, DEFAULT_LOG_RETENTION) }),
    ...(flags.maxCallTime === undefined ? {} : { maxCallTimeMs: maxCallTimeFlag(flags.maxCallTime) }),
    ...(flags.objectStoreMemory === undefined
      ? {}
      : { objectStoreMemory: parseBytes('object-store-memory', flags.objectStoreMemory) }),
    ...(flags.spillLimit === undefined ? {} : { spillLimit: parseBytes('spill-limit', flags.spillLimit) }),
  }
}

/** The same flags for a node process started from here. */
function storeArgs(flags: StartFlags): string[] {
  const args: string[] = []
  if (flags.objectStoreMemory !== undefined) args.push('--object-store-memory', flags.objectStoreMemory)
  if (flags.spillLimit !== undefined) args.push('--spill-limit', flags.spillLimit)
  if (flags.maxCallTime !== undefined) args.push('--max-call-time', flags.maxCallTime)
  if (flags.workerMemory !== undefined) args.push('--worker-memory', flags.workerMemory)
  if (flags.maxCallOutput !== undefined) args.push('--max-call-output', flags.maxCallOutput)
  if (flags.actorThreads !== undefined) args.push('--actor-threads', flags.actorThreads)
  if (flags.logRetention !== undefined) args.push('--log-retention', flags.logRetention)
  if (flags.logLevel !== undefined) args.push('--log-level', flags.logLevel)
  // A head's Redis is not for its nodes: they keep their spill files in a temporary folder.
  if (flags.state !== undefined && !isRedisUrl(flags.state)) args.push('--state', resolve(flags.state))
  return args
}

/** `--max-call-time`: seconds, fractions allowed, up to a day; in ms. */
function maxCallTimeFlag(raw: string): number {
  const seconds = Number(raw)
  if (!/^\d+(\.\d+)?$/.test(raw) || !(seconds > 0) || seconds > MAX_TIMEOUT_MS / 1000) {
    throw new Error(
      `--max-call-time must be a number of seconds above 0 and at most ${MAX_TIMEOUT_MS / 1000}`,
    )
  }
  return seconds * 1000
}

/** `--worker-memory`: a size (512MiB, 1GB); in whole MiB, at least 16. */
function workerMemoryFlag(raw: string): number {
  const mb = Math.floor(parseBytes('worker-memory', raw) / 2 ** 20)
  if (mb < 16) throw new Error('--worker-memory must be at least 16MiB')
  return mb
}

function integerFlag(name: string, raw: string | undefined, min: number): number | undefined {
  if (raw === undefined) return undefined
  const value = Number(raw)
  if (!/^\d+$/.test(raw) || value < min) throw new Error(`--${name} must be an integer of at least ${min}`)
  return value
}

function resourcesFlag(raw: string | undefined): Record<string, number> | undefined {
  if (raw === undefined) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch {
    throw new Error(`--resources must be JSON such as '{"gpu":1}': ${raw}`)
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error('--resources must be a JSON object of numbers')
  }
  for (const [k, v] of Object.entries(parsed)) {
    if (typeof v !== 'number' || !(v >= 0)) throw new Error(`--resources.${k} must be a non-negative number`)
  }
  return parsed as Record<string, number>
}

/**
 * Resolves once `stop` has run after the first SIGINT or SIGTERM (a drain:
 * running calls finish). A second signal, or `graceS` seconds, ends the
 * process at once, after `kill` (what it started must not outlive it).
 */
function untilSignal(stop: () => Promise<void>, graceS: number, kill: () => void = () => {}): Promise<void> {
  return new Promise((done) => {
    let stopping = false
    const now = (why: string) => {
      console.error(`magpie: ${why}, stopping now`)
      kill()
      process.exit(1)
    }
    const onSignal = (signal: string) => {
      if (stopping) now(`second ${signal}`)
      stopping = true
      console.error(`magpie: ${signal}, stopping (again to stop now)`)
      setTimeout(() => now(`not stopped after ${graceS} s`), graceS * 1000).unref()
      stop().then(done, done)
    }
    process.on('SIGINT', () => onSignal('SIGINT'))
    process.on('SIGTERM', () => onSignal('SIGTERM'))
    // A process started by a parent that watches it (--nodes) ends with that parent.
    if (process.env[WITH_PARENT] === '1') {
      process.stdin.on('end', () => now('the parent process ended'))
      process.stdin.resume()
    }
  })
}

/** Set for node processes started by `--nodes`: their stdin is a pipe from the parent, which closes when it ends. */
const WITH_PARENT = 'MAGPIE_EXIT_WITH_PARENT'

export async function runStart(flags: StartFlags): Promise<number> {
  const port = integerFlag('port', flags.port, 0) ?? 8080
  if (port > 65535) throw new Error('--port must be at most 65535')
  const cpus = integerFlag('cpus', flags.cpus, 1)
  const stopGrace = integerFlag('stop-grace', flags.stopGrace, 1) ?? DEFAULT_STOP_GRACE_S
  const nodes = integerFlag('nodes', flags.nodes, 1)
  const functionsDir = resolve(flags.functions ?? 'functions')
  // ./functions is deployed if it is there; a folder given with --functions must be.
  if (flags.functions !== undefined && !existsSync(functionsDir) && flags.join === undefined) {
    throw new Error(`--functions ${flags.functions}: no such folder`)
  }
  const startFunctions = existsSync(functionsDir) ? functionsDir : undefined
  const host = flags.host ?? '127.0.0.1'
  const secretFile = flags.secretFile ?? process.env.MAGPIE_SECRET_FILE
  if (flags.secret !== undefined && secretFile !== undefined)
    throw new Error('--secret and --secret-file exclude each other')
  const fromEnv = process.env.MAGPIE_CLUSTER_SECRET
  const secret =
    secretFile !== undefined
      ? await readSecretFile(secretFile)
      : flags.secret !== undefined
        ? checkSecret(flags.secret, '--secret')
        : fromEnv && checkSecret(fromEnv, 'MAGPIE_CLUSTER_SECRET')
  const advertiseUrl = flags.advertiseUrl ?? process.env.MAGPIE_ADVERTISE_URL
  if (advertiseUrl !== undefined && !isReachableUrl(advertiseUrl)) {
    throw new Error(
      `--advertise-url must be an http URL with a reachable host (not 0.0.0.0 or ::): ${advertiseUrl}`,
    )
  }
  const store = storeFlags(flags)
  const maxBodyBytes = flags.maxBody === undefined ? undefined : parseBytes('max-body', flags.maxBody)
  const gateway = {
    ...(maxBodyBytes === undefined ? {} : { maxBodyBytes }),
    adminToken: flags.adminToken,
    keepVersions: integerFlag('keep-versions', flags.keepVersions, 1),
    maxBundleBytes: flags.maxBundle === undefined ? undefined : parseBytes('max-bundle', flags.maxBundle),
  }
  const redisState = flags.state !== undefined && isRedisUrl(flags.state)
  const stateDir = flags.state === undefined || redisState ? flags.state : resolve(flags.state)
  const admission = {
    maxQueued: integerFlag('max-queued', flags.maxQueued, 1),
    maxQueuedBytes:
      flags.maxQueuedBytes === undefined ? undefined : parseBytes('max-queued-bytes', flags.maxQueuedBytes),
  }
  const modes = [flags.head, flags.join !== undefined, nodes !== undefined].filter(Boolean).length
  if (modes > 1) throw new Error('--head, --join and --nodes exclude each other')
  if (flags.logLevel !== undefined && !isLogLevel(flags.logLevel)) {
    throw new Error(`--log-level must be one of ${LOG_LEVELS.join(', ')}`)
  }
  configureLog(flags.logLevel, {
    role: flags.join !== undefined ? 'node' : flags.head || nodes !== undefined ? 'head' : 'platform',
  })

  if (redisState && !flags.head && nodes === undefined) {
    throw new Error('--state redis://... keeps the state of a head: use it with --head or --nodes')
  }

  if (flags.join !== undefined) {
    if (!secret)
      throw new Error('--join needs the cluster secret: --secret-file, MAGPIE_CLUSTER_SECRET or --secret')
    if (flags.functions !== undefined) {
      console.error('magpie: --functions is ignored with --join: a node runs the functions its head deploys')
    }
    const node = await startNodeProcess({
      head: flags.join,
      secret,
      cpus,
      resources: resourcesFlag(flags.resources),
      ...store,
      stateDir,
      host,
      port: flags.port === undefined ? 0 : port,
      advertiseUrl,
    })
    console.log(`magpie node listening on ${node.listening}, joining ${flags.join}`)
    const stopped = untilSignal(() => node.stop(), stopGrace)
    await Promise.race([node.joined, stopped])
    if (node.registered) console.log(`magpie node ${node.id} joined ${flags.join} as ${node.address}`)
    await stopped
    return 0
  }

  if (flags.head || nodes !== undefined) {
    const head = await startHead({
      functionsDir: startFunctions,
      port,
      host,
      token: flags.token,
      metricsPublic: flags.metricsPublic,
      cors: flags.cors,
      secret,
      stateDir,
      advertiseUrl,
      admission,
      ...gateway,
    })
    await stopBundler()
    console.log(`magpie listening on ${head.url}`)
    const unwatch = flags.watch ? watchFunctions(functionsDir, head.functions) : undefined
    const { calls, objects } = head.restored
    if (calls + objects > 0) {
      console.log(
        `magpie: serving again ${objects} objects and ${calls} calls in flight kept in ${flags.state}`,
      )
    }
    const children: ChildProcess[] = []
    if (nodes === undefined) {
      console.log(`join command (it holds the cluster secret): ${head.joinCommandFile}`)
    } else {
      // The same command that started this process: bin/magpie.mjs.
      const bin = process.argv[1] as string
      for (let i = 0; i < nodes; i++) {
        const args = [bin, 'start', '--join', head.url, '--secret-file', head.secretFile, '--host', host]
        if (cpus !== undefined) args.push('--cpus', String(cpus))
        args.push(...storeArgs(flags))
        children.push(
          // With the Node flags this process has (a heap limit, a profiler).
          spawn(process.execPath, [...process.execArgv, ...args], {
            stdio: ['pipe', 'inherit', 'inherit'],
            // The secret goes by --secret-file: the one in the environment, if any, would clash with it.
            env: { ...withoutSecret(process.env), [WITH_PARENT]: '1' },
          }),
        )
      }
    }
    await untilSignal(
      async () => {
        unwatch?.()
        await Promise.all(
          children.map(async (child) => {
            if (child.exitCode !== null || child.signalCode !== null) return
            const exited = once(child, 'exit')
            child.kill('SIGTERM')
            await exited
          }),
        )
        await head.close()
      },
      stopGrace,
      () => {
        for (const child of children) child.kill('SIGKILL')
      },
    )
    return 0
  }

  const platform = await startPlatform({
    functionsDir: startFunctions,
    port,
    host,
    token: flags.token,
    metricsPublic: flags.metricsPublic,
    cors: flags.cors,
    ...(cpus === undefined ? {} : { cpus }),
    ...store,
    ...gateway,
    stateDir,
    admission,
  })
  await stopBundler()
  console.log(`magpie listening on ${platform.url}`)
  const unwatch =
    flags.watch && platform.functions ? watchFunctions(functionsDir, platform.functions) : undefined
  await untilSignal(() => {
    unwatch?.()
    return platform.close()
  }, stopGrace)
  return 0
}

/** The environment without the cluster secret's variables. */
function withoutSecret(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { MAGPIE_CLUSTER_SECRET: _secret, MAGPIE_SECRET_FILE: _file, MAGPIE_SECRET: _flag, ...rest } = env
  return rest
}
