/**
 * The dashboard in a real browser (Debian's Chromium, driven by
 * playwright-core), against a head with three node processes.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { type Browser, chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT } from './helpers.ts'

const CHROMIUM = process.env.MAGPIE_CHROMIUM ?? '/usr/bin/chromium'
const ARTIFACTS = join(ROOT, 'test/artifacts')

let platform: ChildProcess | undefined
let browser: Browser | undefined
let url = ''

beforeAll(async () => {
  platform = spawn(
    process.execPath,
    [
      join(ROOT, 'bin/magpie.mjs'),
      'start',
      '--nodes',
      '3',
      '--cpus',
      '1',
      '--port',
      '0',
      '--functions',
      join(ROOT, 'test/fixtures/functions'),
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  )
  let out = ''
  url = await new Promise<string>((resolve, reject) => {
    platform?.stdout?.on('data', (chunk: Buffer) => {
      out += chunk
      const match = /magpie listening on (http:\/\/\S+)/.exec(out)
      if (match?.[1]) resolve(match[1])
    })
    platform?.once('exit', (code) => reject(new Error(`the platform exited with ${code}: ${out}`)))
  })
  for (let i = 0; i < 300; i++) {
    const nodes = (await (await fetch(`${url}/v1/nodes`)).json()) as Array<{ state: string }>
    if (nodes.filter((n) => n.state === 'alive').length === 3) break
    await new Promise((r) => setTimeout(r, 100))
  }
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  })
}, 90_000)

afterAll(async () => {
  await browser?.close()
  if (platform && platform.exitCode === null) {
    const exited = once(platform, 'exit')
    platform.kill('SIGTERM')
    await exited
  }
})

const invoke = async (fn: string, args: unknown[]) => {
  const res = await fetch(`${url}/v1/functions/${fn}/invoke`, {
    method: 'POST',
    body: JSON.stringify({ args }),
  })
  return ((await res.json()) as { id: string }).id
}

describe('the dashboard', () => {
  it('shows the nodes, a call running then finished, and a failed call’s stack and logs', async () => {
    const page = await (browser as Browser).newPage({ viewport: { width: 1400, height: 1000 } })
    const errors: string[] = []
    page.on('pageerror', (e) => errors.push(e.message))
    await page.goto(url)
    // Three nodes, alive.
    await page.waitForFunction(
      () => document.querySelectorAll('#nodes tbody td.state-alive').length === 3,
      undefined,
      { timeout: 15_000 },
    )
    // A call that runs for 3 s shows as running, then as finished.
    const slow = await invoke('talker', [12, 250, 'slow'])
    const row = (id: string) => `#tasks tbody tr[data-id="${id}"]`
    await page.waitForSelector(`${row(slow)} td.state-running`, { timeout: 15_000 })
    await page.waitForSelector(`${row(slow)} td.state-finished`, { timeout: 15_000 })
    // A failed call: one click shows its stack and its logs.
    const failed = await invoke('fail-loud', [])
    await page.waitForSelector(`${row(failed)} td.state-failed`, { timeout: 15_000 })
    await page.click(row(failed))
    await page.waitForFunction(
      () => document.getElementById('detail-logs')?.textContent?.includes('about to fail'),
      undefined,
      { timeout: 10_000 },
    )
    expect(await page.textContent('#detail-error')).toMatch(/boom from fail-loud[\s\S]*at /)
    // The timeline has a lane for the thread that ran them.
    await page.waitForTimeout(1200)
    mkdirSync(ARTIFACTS, { recursive: true })
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard.png'), fullPage: true })
    expect(errors).toEqual([])
    await page.close()
  }, 90_000)
})
