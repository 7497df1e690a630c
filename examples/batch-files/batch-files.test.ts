/** The batch-files example: its function unit-tested in local mode, and the whole run at a small size. */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { TaskError } from '../../sdk/index.ts'
import { local } from '../../sdk/testing.ts'
import { stopSpawnedAfterAll } from '../../test/cluster-helpers.ts'
import { runExample } from '../lib/run-example.ts'
import { makeCsv } from './process.ts'

const HERE = import.meta.dirname
stopSpawnedAfterAll()
const out = mkdtempSync(join(tmpdir(), 'magpie-batch-test-'))
afterAll(() => rmSync(out, { recursive: true, force: true }))

describe('the batch-files example', () => {
  it('summarizes a file, and names the line of a broken one (local mode)', async () => {
    const mp = local(join(HERE, 'functions'))
    const summary = (await mp.call('process-file', { path: 'a.csv', text: makeCsv(1, 30) })) as {
      rows: number
      sensors: Record<string, { count: number }>
    }
    expect(summary.rows).toBe(30)
    expect(Object.values(summary.sensors).reduce((n, s) => n + s.count, 0)).toBe(30)
    const err = await mp
      .call('process-file', { path: 'b.csv', text: 'sensor,time,value\ns1,1,oops\n' })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TaskError)
    expect((err as Error).message).toContain('line 2')
  })

  it('processes 300 files on a platform, reports the broken one, and prints the figures', async () => {
    const { output, json: summary } = await runExample(
      join(HERE, 'run.ts'),
      ['--files', '300', '--rows', '20', '--out', out],
      'files',
    )
    expect(summary).toMatchObject({
      files: 300,
      failed: 1,
      plain_loop: { failed: 1 },
      piscina: { failed: 1 },
    })
    expect(summary.files_per_s).toBeGreaterThan(0)
    // Not a terminal: plain lines, not a redrawn bar; the broken file named with its error.
    expect(output).not.toContain('\r')
    expect(output).toMatch(/300\/300 files 100%/)
    expect(output).toMatch(/failed {2}readings-00007\.csv: .*cannot read/)
    const results = readdirSync(join(out, 'magpie'))
    expect(results).toHaveLength(299)
    const one = JSON.parse(readFileSync(join(out, 'magpie', 'readings-00000.csv.json'), 'utf8'))
    expect(one).toMatchObject({ path: 'readings-00000.csv', rows: 20 })
  }, 120_000)
})
