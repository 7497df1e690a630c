/**
 * `magpie map`: a function called once per input file, results under a
 * folder, a failing file reported, and a second run doing only what is new,
 * changed or failed (results keyed by path and content hash).
 */
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { ROOT, usePlatform } from './helpers.ts'
import { tempDirs } from './temp-dirs.ts'

const ctx = usePlatform({ cpus: 2 })
const temp = tempDirs('magpie-map-')

async function map(cwd: string, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [join(ROOT, 'bin/magpie.mjs'), 'map', ...args, '--url', ctx.url],
      { cwd },
    )
    return { code: 0, out: stdout, err: stderr }
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string }
    return { code: err.code, out: err.stdout, err: err.stderr }
  }
}

const summary = (out: string) => JSON.parse(out.trim().split('\n').pop() as string)

describe('magpie map', () => {
  it('calls the function per file, reports a failure, and resumes with only what is new, changed or failed', async () => {
    const dir = temp()
    mkdirSync(join(dir, 'in/sub'), { recursive: true })
    for (let i = 0; i < 20; i++) writeFileSync(join(dir, 'in', `f${i}.txt`), 'a\nb\n'.repeat(i + 1))
    writeFileSync(join(dir, 'in/sub/deep.txt'), 'x\n')
    writeFileSync(join(dir, 'in/bad.txt'), 'FAIL\n')

    const first = await map(
      dir,
      'line-count',
      '--inputs',
      'in/**/*.txt',
      '--out',
      'out',
      '--concurrency',
      '4',
    )
    expect(first.code, first.err).toBe(1)
    expect(summary(first.out)).toMatchObject({ files: 22, done: 21, skipped: 0, failed: 1 })
    expect(first.err).toMatch(/failed {2}in\/bad\.txt: .*asks to fail/)
    expect(JSON.parse(readFileSync(join(dir, 'out/in/f3.txt.json'), 'utf8'))).toEqual({
      path: 'in/f3.txt',
      lines: 8,
    })
    expect(existsSync(join(dir, 'out/in/sub/deep.txt.json'))).toBe(true)

    // Fixed, changed and new files run again; the rest is skipped.
    writeFileSync(join(dir, 'in/bad.txt'), 'fine now\n')
    writeFileSync(join(dir, 'in/f0.txt'), 'one\ntwo\nthree\n')
    writeFileSync(join(dir, 'in/new.txt'), 'new\n')
    const second = await map(dir, 'line-count', '--inputs', 'in/**/*.txt', '--out', 'out')
    expect(second.code, second.err).toBe(0)
    expect(summary(second.out)).toMatchObject({ files: 23, done: 3, skipped: 20, failed: 0 })
    expect(JSON.parse(readFileSync(join(dir, 'out/in/f0.txt.json'), 'utf8'))).toEqual({
      path: 'in/f0.txt',
      lines: 3,
    })

    const third = await map(dir, 'line-count', '--inputs', 'in/**/*.txt', '--out', 'out')
    expect(summary(third.out)).toMatchObject({ files: 23, done: 0, skipped: 23 })
  })

  it('says what is missing or wrong, with exit 1 or 2', async () => {
    const dir = temp()
    const none = await map(dir, 'line-count', '--inputs', 'nothing/*.txt', '--out', 'out')
    expect(none.code).toBe(1)
    expect(none.err).toContain('no files match nothing/*.txt')
    const noOut = await map(dir, 'line-count', '--inputs', '*.txt')
    expect(noOut.code).toBe(1)
    expect(noOut.err).toContain('--out DIR is required')
    const unknown = await map(dir, 'line-count', '--inputz', '*.txt')
    expect(unknown.code).toBe(2)
  })
})
