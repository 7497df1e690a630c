/**
 * The SDK where the README says it runs: the README's example (examples/sdk.mjs,
 * importing 'magpie', which is dist/sdk.js) under Node, Deno and Bun (both from
 * npm, as dev dependencies), and in headless Chromium from a page of another
 * origin, which the gateway lets in with --cors.
 */
import { execFile, execFileSync } from 'node:child_process'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT, usePlatform } from './helpers.ts'
import { tempDirs } from './temp-dirs.ts'

const TOKEN = 'runtime-token-0123456789'
let page: Server
let pageOrigin = ''
const tempDir = tempDirs('magpie-runtimes-')

// The page's server starts first: the platform lets its origin in.
beforeAll(async () => {
  page = createServer((req, res) => {
    // The SDK's build: sdk.js and the chunks it imports.
    const file = /^\/((?:sdk|chunk-[A-Z0-9]+)\.js)$/.exec(req.url ?? '')?.[1]
    if (file) {
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(join(ROOT, 'dist', file)))
      return
    }
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><script type="module">
      import { connect } from './sdk.js'
      const params = new URLSearchParams(location.search)
      const mp = connect(params.get('url'), { token: params.get('token') })
      const square = mp.remote('square')
      try {
        const values = await mp.get([1, 2, 3].map((x) => square.remote(x)))
        // Answers written straight to the socket carry CORS's headers too: a stream still open, and bytes.
        const [slept] = await mp.get([mp.remote('sleep').remote(300)])
        const bytes = await mp.get(await mp.put(new Uint8Array([7, 8, 9])))
        document.title = 'done ' + JSON.stringify(values) + ' ' + slept + ' ' + Array.from(bytes).join(',')
      } catch (err) {
        document.title = 'failed ' + err.message
      }
    </script>`)
  })
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve))
  pageOrigin = `http://127.0.0.1:${(page.address() as AddressInfo).port}`
  options.cors = [pageOrigin]
})
afterAll(() => new Promise<void>((resolve) => page.close(() => resolve())))

const options: { token: string; cors?: string[] } = { token: TOKEN }
const ctx = usePlatform(options)

/** The example's lines, as each runtime prints them (spaces made one). */
function expectExampleOutput(out: string): void {
  const lines = out
    .trim()
    .split('\n')
    .map((l) => l.replace(/\s+/g, ' ').trim())
  expect(lines).toEqual(['1764', '[ 1, 4, 9 ]', '1 1', 'FUNCTION_ERROR CustomError boom'])
}

const run = async (command: string, args: string[]) =>
  (
    await promisify(execFile)(command, args, {
      cwd: ROOT,
      env: { ...process.env, MAGPIE_URL: ctx.url, MAGPIE_TOKEN: TOKEN, NO_COLOR: '1' },
    })
  ).stdout

/** Bun from npm: its binary comes with its install script, which npm may not have run. */
function bun(): string {
  const bin = join(ROOT, 'node_modules/bun/bin/bun.exe')
  if (!existsSync(bin) || statSync(bin).size < 1_000_000) {
    execFileSync(process.execPath, ['install.js'], { cwd: join(ROOT, 'node_modules/bun'), stdio: 'inherit' })
  }
  return bin
}

describe('the SDK in every runtime', () => {
  it('runs the README example under Node', async () => {
    expectExampleOutput(await run(process.execPath, ['examples/sdk.mjs']))
  }, 30_000)

  it('runs the README example under Deno', async () => {
    const map = join(tempDir(), 'import-map.json')
    writeFileSync(map, JSON.stringify({ imports: { magpie: `${join(ROOT, 'dist/sdk.js')}` } }))
    const deno = join(ROOT, 'node_modules/@deno/linux-x64-glibc/deno')
    expectExampleOutput(
      await run(deno, [
        'run',
        '--quiet',
        '--allow-net',
        '--allow-env',
        '--allow-read',
        `--import-map=${map}`,
        'examples/sdk.mjs',
      ]),
    )
  }, 60_000)

  it('runs the README example under Bun', async () => {
    expectExampleOutput(await run(bun(), ['examples/sdk.mjs']))
  }, 120_000)

  it('runs in Chromium from a page of another origin (CORS, preflight included)', async () => {
    const browser = await chromium.launch({
      executablePath: process.env.MAGPIE_CHROMIUM ?? '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    })
    try {
      const tab = await browser.newPage()
      await tab.goto(`${pageOrigin}/?url=${encodeURIComponent(ctx.url)}&token=${TOKEN}`)
      await tab.waitForFunction(() => document.title !== '', undefined, { timeout: 20_000 })
      expect(await tab.title()).toBe('done [1,4,9] 300 7,8,9')
    } finally {
      await browser.close()
    }
  }, 60_000)

  it('answers a preflight for Authorization and X-Magpie-Object-Id, only for the origins let in', async () => {
    const preflight = await fetch(`${ctx.url}/v1/functions/square/invoke`, {
      method: 'OPTIONS',
      headers: {
        origin: pageOrigin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,x-magpie-object-id,content-type',
      },
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe(pageOrigin)
    expect(preflight.headers.get('access-control-allow-headers')?.toLowerCase()).toContain(
      'x-magpie-object-id',
    )
    const other = await fetch(`${ctx.url}/v1/functions`, {
      headers: { origin: 'http://elsewhere.example', authorization: `Bearer ${TOKEN}` },
    })
    expect(other.headers.get('access-control-allow-origin')).toBeNull()
  })
})
