/** Runs `magpie start` as a child process for benchmarks, as a user would, and stops it. */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { resolve } from 'node:path'

export const ROOT = resolve(import.meta.dirname, '../..')

export interface PlatformProcess {
  url: string
  child: ChildProcess
  stop(): Promise<void>
}

/**
 * `magpie start ARGS` as a child process, its stdout piped to the caller;
 * `stop` ends it with SIGTERM (and it is killed if this process exits first).
 */
export function spawnStart(args: string[]): Omit<PlatformProcess, 'url'> {
  // Node's own flags for the platform (`--cpu-prof --cpu-prof-dir DIR` to profile it), which NODE_OPTIONS cannot carry.
  const flags = (process.env.MAGPIE_BENCH_NODE_FLAGS ?? '').split(/\s+/).filter((f) => f !== '')
  const child = spawn(process.execPath, [...flags, resolve(ROOT, 'bin/magpie.mjs'), 'start', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    await exited
  }
  process.once('exit', () => child.kill('SIGKILL'))
  return { child, stop }
}

export async function startPlatformProcess(args: string[] = []): Promise<PlatformProcess> {
  const { child, stop } = spawnStart(['--port', '0', ...args])
  let output = ''
  const url = await new Promise<string>((done, fail) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk
      const match = /listening on (http:\/\/[^\s,]+)/.exec(output)
      if (match?.[1]) done(match[1])
    })
    child.once('exit', (code) => fail(new Error(`magpie start exited with ${code}: ${output}`)))
  })
  return { url, child, stop }
}

/** Reads one counter of the gateway's /metrics, summed over its series that match `labels`. */
export async function readCounter(
  url: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  let sum = 0
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      sum += Number(line.split(' ').pop())
  }
  return sum
}
