// Emits the SDK's declaration files into dist/types (tsc, tsconfig.sdk.json),
// with their relative imports ending in .js, as a consumer's NodeNext
// resolution wants them.
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const out = resolve(root, process.argv[2] ?? 'dist/types')
rmSync(out, { recursive: true, force: true })
execFileSync(
  process.execPath,
  [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.sdk.json'), '--outDir', out],
  {
    stdio: 'inherit',
  },
)
for (const name of readdirSync(out)) {
  if (!name.endsWith('.d.ts')) continue
  const file = join(out, name)
  const text = readFileSync(file, 'utf8').replace(/(from\s+'\.{1,2}\/[^']+)\.ts'/g, "$1.js'")
  writeFileSync(file, text)
}
