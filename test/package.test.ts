/**
 * magpie as an installed package: its CLI runs from a folder it cannot
 * write (a global or read-only install), as a user who is not its owner,
 * and writes nothing there. Needs root, to run as `nobody` (setpriv).
 */
import { execFile, execFileSync } from 'node:child_process'
import {
  chmodSync,
  cpSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { spawnStart, stopSpawnedAfterAll } from './cluster-helpers.ts'
import { ROOT, usePlatform } from './helpers.ts'
import { tempDirs } from './temp-dirs.ts'

const tempDir = tempDirs('magpie-pack-')
const ctx = usePlatform({ cpus: 1 })
stopSpawnedAfterAll()

/** Every file under `dir`, with its size and modification time. */
function snapshot(dir: string): string[] {
  const out: string[] = []
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, e.name)
      if (e.name === 'node_modules') continue
      if (e.isDirectory()) walk(path)
      else out.push(`${path} ${statSync(path).size} ${statSync(path).mtimeMs}`)
    }
  }
  walk(dir)
  return out.sort()
}

/**
 * What `npm pack` makes, made in a copy under `dir` (so that this repository's
 * dist/ is not rebuilt under the other tests' feet): the package's files, the
 * SDK bundle, its declaration files and the CLI's build. Its node_modules are
 * this repository's.
 */
function packageCopy(dir: string): string {
  chmodSync(dir, 0o755)
  const pkg = join(dir, 'package')
  const listed = JSON.parse(
    execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' }),
  ) as Array<{ files: Array<{ path: string }> }>
  for (const { path } of listed[0]?.files ?? []) {
    if (path.startsWith('dist/')) continue
    mkdirSync(dirname(join(pkg, path)), { recursive: true })
    cpSync(join(ROOT, path), join(pkg, path))
  }
  symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'))
  execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { cwd: pkg })
  execFileSync(process.execPath, [join(ROOT, 'scripts/build-types.mjs'), join(pkg, 'dist/types')])
  execFileSync(process.execPath, [
    '--input-type=module',
    '-e',
    `import { runBuild } from ${JSON.stringify(join(pkg, 'bin/run-build.mjs'))}; await runBuild(${JSON.stringify(pkg)}, { prebuilt: true })`,
  ])
  return pkg
}

describe('an installed magpie', () => {
  it('runs from a read-only copy of the package, as another user, and writes nothing there', async () => {
    const dir = tempDir()
    const pkg = packageCopy(dir)
    const functions = join(dir, 'functions')
    cpSync(join(ROOT, 'functions/square'), join(functions, 'square'), { recursive: true })
    execFileSync('chmod', ['-R', 'a+rX,a-w', pkg, functions])
    const before = snapshot(pkg)

    const { url, stop } = await spawnStart(['--port', '0', '--functions', functions], {
      bin: join(pkg, 'bin/magpie.mjs'),
      prefix: ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'],
      cwd: tmpdir(),
      env: { HOME: '/nonexistent' },
    })
    const res = await fetch(`${url}/v1/functions/square/invoke?wait=20`, { method: 'POST', body: '[7]' })
    expect(await res.text()).toBe('49')
    await stop()
    expect(snapshot(pkg)).toEqual(before)
    execFileSync('chmod', ['-R', 'u+w', pkg, functions])
  }, 90_000)

  it('packs into a package whose types check in a NodeNext consumer (tsc --init) and which calls a server', async () => {
    const dir = tempDir()
    const pkg = packageCopy(dir)
    execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', dir], {
      cwd: pkg,
      stdio: 'ignore',
    })
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz')) as string
    const consumer = join(dir, 'consumer')
    mkdirSync(consumer)
    writeFileSync(
      join(consumer, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
    )
    execFileSync('npm', ['install', join(dir, tarball), '--prefer-offline', '--no-audit', '--no-fund'], {
      cwd: consumer,
      stdio: 'ignore',
    })
    const tsc = join(ROOT, 'node_modules/.bin/tsc')
    execFileSync(tsc, ['--init'], { cwd: consumer, stdio: 'ignore' })
    const initConfig = JSON.parse(
      readFileSync(join(consumer, 'tsconfig.json'), 'utf8')
        .replace(/^\s*\/\/.*$/gm, '')
        .replace(/,(\s*[}\]])/g, '$1'),
    ) as Record<string, unknown>
    // tsc --init's config takes every .ts file: one at a time.
    const only = (file: string) =>
      writeFileSync(join(consumer, 'tsconfig.json'), JSON.stringify({ ...initConfig, files: [file] }))
    const check = () =>
      promisify(execFile)(tsc, ['-p', 'tsconfig.json', '--noEmit'], { cwd: consumer }).then(
        () => ({ ok: true, out: '' }),
        (e: { stdout: string }) => ({ ok: false, out: e.stdout }),
      )
    writeFileSync(
      join(consumer, 'good.ts'),
      `import { connect } from 'magpie'
const square = (x: number): number => x * x
const mp = connect()
const ref = mp.remote<typeof square>('square').remote(7)
const value: number = await mp.get(ref)
console.log(value)
await mp.close()
`,
    )
    writeFileSync(
      join(consumer, 'bad.ts'),
      `import { connect, type ObjectRef } from 'magpie'
const square = (x: number): number => x * x
declare const text: ObjectRef<string>
connect().remote<typeof square>('square').remote(text)
`,
    )
    only('good.ts')
    expect(await check()).toEqual({ ok: true, out: '' })
    only('bad.ts')
    const bad = await check()
    expect(bad.ok).toBe(false)
    expect(bad.out).toMatch(
      /bad\.ts\(4,\d+\): error TS2345: Argument of type 'ObjectRef<string>' is not assignable to parameter of type 'number \| ObjectRef<number>'/,
    )
    // good.ts, compiled with the consumer's config, against a server.
    only('good.ts')
    execFileSync(tsc, ['-p', 'tsconfig.json'], { cwd: consumer })
    const { stdout } = await promisify(execFile)(process.execPath, ['good.js'], {
      cwd: consumer,
      env: { ...process.env, MAGPIE_URL: ctx.url },
    })
    expect(stdout.trim()).toBe('49')
  }, 180_000)
})
