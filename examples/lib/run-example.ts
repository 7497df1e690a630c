/** Runs an example's script as a user would (tsx), in a process group of its own, and reads its JSON line. */
import { once } from 'node:events'
import { join, resolve } from 'node:path'
import { expect } from 'vitest'
import { spawnGroup } from '../../test/cluster-helpers.ts'

const ROOT = resolve(import.meta.dirname, '../..')

/** Its output (stdout and stderr), once it exited 0, and its line of JSON that starts with `{"key"`. */
export async function runExample(script: string, args: string[], key: string) {
  const run = spawnGroup(process.execPath, [join(ROOT, 'node_modules/tsx/dist/cli.mjs'), script, ...args])
  const [code] = await once(run.child, 'exit')
  const output = run.output()
  expect(code, output).toBe(0)
  const line = output.split('\n').find((l) => l.startsWith(`{"${key}"`))
  expect(line, output).toBeDefined()
  return { output, json: JSON.parse(line as string) }
}
