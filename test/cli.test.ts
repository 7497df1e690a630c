/** `magpie start` as a real process: it serves curl-style calls, and SIGINT or SIGTERM stops it and its threads. */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
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
})

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
