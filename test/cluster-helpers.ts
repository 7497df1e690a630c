/**
 * Processes of a cluster for tests: joined nodes (`magpie start --join`) and
 * heads run as `magpie start --head`, each spawned as a user would, their
 * output kept for the test to read, and every one stopped afterwards, even
 * when the test fails.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { join, resolve } from 'node:path'
import { afterAll } from 'vitest'

const ROOT = resolve(import.meta.dirname, '..')
const BIN = join(ROOT, 'bin/magpie.mjs')
const spawned = new Set<ChildProcess>()

/** Children that lead a process group of their own: stopped with everything they started. */
const groups = new Set<ChildProcess>()

function stopAll(): void {
  for (const child of spawned) {
    if (child.exitCode !== null || child.signalCode !== null) continue
    if (groups.has(child) && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL')
        continue
      } catch {
        // The group is gone already: the child alone.
      }
    }
    child.kill('SIGKILL')
  }
}
process.once('exit', stopAll)

/** Stops every process this file spawned, after its tests. */
export function stopSpawnedAfterAll(): void {
  afterAll(async () => {
    const exits = [...spawned].map((child) =>
      child.exitCode === null && child.signalCode === null ? once(child, 'exit') : undefined,
    )
    stopAll()
    await Promise.all(exits)
  })
}

export interface Spawned {
  child: ChildProcess
  /** Everything it wrote so far, stdout and stderr. */
  output(): string
  /** Resolves with the first match of `pattern` in its output; rejects if it exits first or after `ms`. */
  waitFor(pattern: RegExp, ms?: number): Promise<RegExpMatchArray>
  /** SIGTERM, and the exit. */
  stop(): Promise<void>
}

function track(child: ChildProcess, echo: boolean): Spawned {
  spawned.add(child)
  let text = ''
  const waiters = new Set<() => void>()
  const take = (chunk: Buffer, to: NodeJS.WriteStream) => {
    text += chunk
    if (echo) to.write(chunk)
    for (const wake of waiters) wake()
  }
  child.stdout?.on('data', (chunk: Buffer) => take(chunk, process.stdout))
  child.stderr?.on('data', (chunk: Buffer) => take(chunk, process.stderr))
  const exited = once(child, 'exit')
  return {
    child,
    output: () => text,
    waitFor(pattern, ms = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(text)
          if (match) {
            done()
            resolve(match)
          }
        }
        const timer = setTimeout(() => {
          done()
          reject(new Error(`no ${pattern} within ${ms} ms in:\n${text}`))
        }, ms)
        const onExit = () => {
          done()
          reject(new Error(`exited with ${child.exitCode ?? child.signalCode} before ${pattern}:\n${text}`))
        }
        const done = () => {
          clearTimeout(timer)
          waiters.delete(check)
          child.off('exit', onExit)
        }
        waiters.add(check)
        child.once('exit', onExit)
        check()
      })
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      await exited
    },
  }
}

export interface NodeSpawnOptions {
  /** The head's URL. */
  head: string
  /** Passed as MAGPIE_CLUSTER_SECRET, unless `args` bring --secret-file. */
  secret?: string
  args?: string[]
  /** Runs the node inside this network namespace (`ip netns exec`). */
  netns?: string
  /** Resolve once it listens, before it joined (default: once it joined). */
  untilJoined?: boolean
  /** Echo its output into the test's (default true). */
  echo?: boolean
}

export interface SpawnedNode extends Spawned {
  /** Set once it joined. */
  id: string
  address: string
  /** Resolves with id and address when it joins. */
  joined: Promise<{ id: string; address: string }>
}

/** The one way tests start a node that joins a head: `magpie start --join HEAD --cpus 1 ...`. */
export async function spawnNode(options: NodeSpawnOptions): Promise<SpawnedNode> {
  const command = [BIN, 'start', '--join', options.head, '--cpus', '1', ...(options.args ?? [])]
  const argv = options.netns ? ['netns', 'exec', options.netns, process.execPath, ...command] : command
  const child = spawn(options.netns ? 'ip' : process.execPath, argv, {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      ...(options.secret === undefined ? {} : { MAGPIE_CLUSTER_SECRET: options.secret }),
    },
  })
  const base = track(child, options.echo ?? false)
  const node: SpawnedNode = {
    ...base,
    id: '',
    address: '',
    joined: base.waitFor(/magpie node (\S+) joined \S+ as (\S+)/, 60_000).then((m) => {
      node.id = m[1] as string
      node.address = m[2] as string
      return { id: node.id, address: node.address }
    }),
  }
  node.joined.catch(() => {})
  if (options.untilJoined === false) await base.waitFor(/magpie node listening on/)
  else await node.joined
  return node
}

export interface SpawnedHead extends Spawned {
  url: string
}

/** A head in a process of its own (`magpie start --head ...`), for tests that kill it. */
export function spawnHead(args: string[], echo = false): Promise<SpawnedHead> {
  return spawnStart(['--head', ...args], { echo })
}

/**
 * `magpie start ARGS` in a process of its own, once it listens: `bin` runs
 * another copy of magpie, `prefix` runs it under another command (setpriv).
 */
export async function spawnStart(
  args: string[],
  options: { echo?: boolean; env?: NodeJS.ProcessEnv; bin?: string; prefix?: string[]; cwd?: string } = {},
): Promise<SpawnedHead> {
  const argv = [process.execPath, options.bin ?? BIN, 'start', ...args]
  const [command, ...rest] = [...(options.prefix ?? []), ...argv]
  const child = spawn(command as string, rest, {
    cwd: options.cwd ?? ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
  })
  const base = track(child, options.echo ?? false)
  const match = await base.waitFor(/magpie listening on (http:\/\/\S+)/)
  return { ...base, url: match[1] as string }
}

/**
 * A command in a process group of its own (a script that starts servers of
 * its own): stopped, with all it started, after the file's tests or when
 * the test process exits.
 */
export function spawnGroup(
  command: string,
  args: string[],
  options: { echo?: boolean; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Spawned {
  const child = spawn(command, args, {
    cwd: options.cwd ?? ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
    detached: true,
  })
  groups.add(child)
  return track(child, options.echo ?? false)
}

/** A port free right now on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  await once(server, 'close')
  return port
}

/** Waits until `check` holds, polling; throws after `ms`. */
export async function until(check: () => Promise<boolean> | boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 50))
  }
}
