/**
 * magpie as an installed package: its CLI runs from a folder it cannot
 * write (a global or read-only install), as a user who is not its owner,
 * and writes nothing there. Needs root, to run as `nobody` (setpriv).
 */
import { execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { chmodSync, cpSync, mkdirSync, readdirSync, statSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ROOT } from './helpers.ts'
import { tempDirs } from './temp-dirs.ts'

const tempDir = tempDirs('magpie-pack-')
const children: ReturnType<typeof spawn>[] = []
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
})

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

describe('an installed magpie', () => {
  it('runs from a read-only copy of the package, as another user, and writes nothing there', async () => {
    const dir = tempDir()
    chmodSync(dir, 0o755)
    const pkg = join(dir, 'package')
    // The files `npm pack` would take, then the build it makes (prepack) into the copy.
    const listed = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
        cwd: ROOT,
        encoding: 'utf8',
      }),
    ) as Array<{ files: Array<{ path: string }> }>
    for (const { path } of listed[0]?.files ?? []) {
      if (path.startsWith('dist/')) continue
      mkdirSync(dirname(join(pkg, path)), { recursive: true })
      cpSync(join(ROOT, path), join(pkg, path))
    }
    symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'))
    execFileSync(process.execPath, [
      '--input-type=module',
      '-e',
      `import { runBuild } from ${JSON.stringify(join(pkg, 'bin/run-build.mjs'))}; await runBuild(${JSON.stringify(pkg)}, { prebuilt: true })`,
    ])
    const functions = join(dir, 'functions')
    cpSync(join(ROOT, 'functions/square'), join(functions, 'square'), { recursive: true })
    execFileSync('chmod', ['-R', 'a+rX,a-w', pkg, functions])
    const before = snapshot(pkg)

    const child = spawn(
      'setpriv',
      [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        process.execPath,
        join(pkg, 'bin/magpie.mjs'),
        'start',
        '--port',
        '0',
        '--functions',
        functions,
      ],
      { cwd: tmpdir(), stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HOME: '/nonexistent' } },
    )
    children.push(child)
    let out = ''
    child.stderr?.on('data', (c: Buffer) => {
      out += c
    })
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout?.on('data', (c: Buffer) => {
        out += c
        const match = /listening on (http:\/\/\S+)/.exec(out)
        if (match?.[1]) resolve(match[1])
      })
      child.once('exit', (code) => reject(new Error(`exited with ${code}: ${out}`)))
    })
    const res = await fetch(`${url}/v1/functions/square/invoke?wait=20`, { method: 'POST', body: '[7]' })
    expect(await res.text()).toBe('49')
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    await exited
    expect(snapshot(pkg)).toEqual(before)
    execFileSync('chmod', ['-R', 'u+w', pkg, functions])
  }, 90_000)
})
