/** `magpie start` as a real process: it serves curl-style calls, and SIGINT or SIGTERM stops it and its threads. */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ROOT } from './helpers.ts'

const started: ChildProcess[] = []

afterEach(() => {
  for (const child of started.splice(0)) if (child.exitCode === null) child.kill('SIGKILL')
})

/** Starts `magpie start --port 0` and resolves with its URL once it listens. */
async function startCli(args: string[] = []): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    [join(ROOT, 'bin/magpie.mjs'), 'start', '--port', '0', '--cpus', '2', ...args],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  started.push(child)
  let output = ''
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening" line in time: ${output}`)), 20_000)
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk
      const match = /listening on (http:\/\/\S+)/.exec(output)
      if (match?.[1]) {
        clearTimeout(timer)
        resolve(match[1])
      }
    })
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk
    })
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${output}`)))
  })
  return { child, url }
}

async function stopsWith(signal: NodeJS.Signals) {
  const { child, url } = await startCli()
  const response = await fetch(`${url}/v1/functions/square/invoke?wait=10`, { method: 'POST', body: '[42]' })
  expect(await response.text()).toBe('1764')
  const exited = once(child, 'exit')
  child.kill(signal)
  const [code] = (await exited) as [number | null]
  expect(code).toBe(0)
  await expect(fetch(`${url}/healthz`)).rejects.toThrow()
}

describe('magpie start', () => {
  it('serves ./functions and stops cleanly on SIGINT', () => stopsWith('SIGINT'))
  it('stops cleanly on SIGTERM', () => stopsWith('SIGTERM'))

  it('refuses a non-loopback address without a token', async () => {
    await expect(startCli(['--host', '0.0.0.0'])).rejects.toThrow(/token/)
  })

  it('stops at once on a second signal, though a node runs a stuck call', async () => {
    const { child, url } = await startCli(['--nodes', '1', '--cpus', '1'])
    for (let i = 0; i < 100; i++) {
      if (((await (await fetch(`${url}/v1/nodes`)).json()) as unknown[]).length === 1) break
      await new Promise((r) => setTimeout(r, 100))
    }
    const kids = childrenOf(child.pid as number)
    await fetch(`${url}/v1/functions/busy/invoke`, { method: 'POST', body: '[60000]' })
    await new Promise((r) => setTimeout(r, 500))
    const exited = once(child, 'exit')
    const started = Date.now()
    // The first drains: the node waits for its running call.
    child.kill('SIGINT')
    await new Promise((r) => setTimeout(r, 1000))
    expect(child.exitCode).toBeNull()
    child.kill('SIGINT')
    await exited
    expect(Date.now() - started).toBeLessThan(10_000)
    for (let i = 0; i < 50 && kids.some(alive); i++) await new Promise((r) => setTimeout(r, 100))
    expect(kids.filter(alive)).toEqual([])
  })

  it('stops on SIGTERM though the reader of its stdout stalled with much output waiting', async () => {
    const { child, url } = await startCli(['--functions', join(ROOT, 'test/fixtures/functions')])
    // Nothing reads its stdout from now on: the pipe fills, and what a call prints waits in the process.
    child.stdout?.pause()
    child.stdout?.removeAllListeners('data')
    const res = await fetch(`${url}/v1/functions/chatty/invoke?wait=30`, {
      method: 'POST',
      body: JSON.stringify({ args: [900, 'X'] }),
    })
    expect(await res.json()).toBe(900)
    const exited = once(child, 'exit')
    const started = Date.now()
    child.kill('SIGTERM')
    await exited
    expect(Date.now() - started).toBeLessThan(10_000)
  })

  it('ends the node processes of --nodes with it, even when it is killed', async () => {
    const { child, url } = await startCli(['--nodes', '2', '--cpus', '1'])
    for (let i = 0; i < 100; i++) {
      const list = (await (await fetch(`${url}/v1/nodes`)).json()) as unknown[]
      if (list.length === 2) break
      await new Promise((r) => setTimeout(r, 100))
    }
    const kids = childrenOf(child.pid as number)
    expect(kids).toHaveLength(2)
    child.kill('SIGKILL')
    for (let i = 0; i < 100 && kids.some(alive); i++) await new Promise((r) => setTimeout(r, 100))
    expect(kids.filter(alive)).toEqual([])
  })
})

/** Pids of the processes whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        return readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]?.split(' ')[1] === String(pid)
      } catch {
        return false
      }
    })
    .map(Number)
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('magpie invoke and get', () => {
  it('calls a function from the shell', async () => {
    const { child, url } = await startCli()
    const run = spawn(
      process.execPath,
      [join(ROOT, 'bin/magpie.mjs'), 'invoke', 'add', '[2, 3]', '--url', url],
      {
        cwd: ROOT,
      },
    )
    let out = ''
    run.stdout.on('data', (chunk: Buffer) => {
      out += chunk
    })
    const [code] = (await once(run, 'exit')) as [number]
    expect(code).toBe(0)
    expect(out.trim()).toBe('5')
    child.kill('SIGTERM')
    await once(child, 'exit')
  })
})

describe('the command line', () => {
  const magpie = (args: string[], env: Record<string, string> = {}) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, [join(ROOT, 'bin/magpie.mjs'), ...args], {
        cwd: ROOT,
        env: { ...process.env, ...env },
      })
      started.push(child)
      let out = ''
      let err = ''
      child.stdout.on('data', (c: Buffer) => {
        out += c
      })
      child.stderr.on('data', (c: Buffer) => {
        err += c
      })
      child.once('exit', (code) => resolve({ code, out, err }))
    })

  it('answers --help, -h, COMMAND --help and --version with exit 0', async () => {
    for (const args of [['--help'], ['-h'], ['help']]) {
      const run = await magpie(args)
      expect(run.code).toBe(0)
      expect(run.out).toMatch(/^usage: magpie <command>/)
      expect(run.out).toMatch(/^ {2}timeline /m)
    }
    const start = await magpie(['start', '--help'])
    expect(start.code).toBe(0)
    expect(start.out).toMatch(/^usage: magpie start/)
    expect(start.out).toMatch(/MAGPIE_OBJECT_STORE_MEMORY/)
    const logs = await magpie(['logs', '-h'])
    expect(logs).toMatchObject({ code: 0, out: expect.stringMatching(/^usage: magpie logs ID/) })
    const version = await magpie(['--version'])
    expect(version.code).toBe(0)
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
    expect(version.out.trim()).toBe(pkg.version)
  }, 30_000)

  it('prints the usage and exits 2 for an unknown command, an unknown option, or an option of another command', async () => {
    const none = await magpie([])
    expect(none.code).toBe(2)
    expect(none.err).toMatch(/usage: magpie <command>/)
    const unknown = await magpie(['launch'])
    expect(unknown.code).toBe(2)
    expect(unknown.err).toMatch(/unknown command: launch[\s\S]*usage: magpie <command>/)
    const foreign = await magpie(['invoke', 'add', '--cpus', '4'])
    expect(foreign.code).toBe(2)
    expect(foreign.err).toMatch(/Unknown option '--cpus'[\s\S]*usage: magpie invoke NAME/)
    expect((await magpie(['status', '--follow'])).code).toBe(2)
  }, 30_000)

  it('reads every option of start from MAGPIE_* variables; the command line wins', async () => {
    const run = spawn(process.execPath, [join(ROOT, 'bin/magpie.mjs'), 'start'], {
      cwd: ROOT,
      env: {
        ...process.env,
        MAGPIE_PORT: '0',
        MAGPIE_CPUS: '1',
        MAGPIE_METRICS_PUBLIC: '1',
        MAGPIE_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    started.push(run)
    let out = ''
    const url = await new Promise<string>((resolve, reject) => {
      run.stdout?.on('data', (chunk: Buffer) => {
        out += chunk
        const match = /listening on (http:\/\/\S+)/.exec(out)
        if (match?.[1]) resolve(match[1])
      })
      run.once('exit', (code) => reject(new Error(`exited with ${code}: ${out}`)))
    })
    const nodes = (await (await fetch(`${url}/v1/nodes`)).json()) as Array<{ cpus: number }>
    expect(nodes[0]?.cpus).toBe(1)
    const bad = await magpie(['start', '--port', '0'], { MAGPIE_METRICS_PUBLIC: 'maybe' })
    expect(bad.code).toBe(2)
    expect(bad.err).toMatch(/MAGPIE_METRICS_PUBLIC must be 1, true, 0 or false/)
    run.kill('SIGTERM')
    await once(run, 'exit')
  }, 30_000)
})
