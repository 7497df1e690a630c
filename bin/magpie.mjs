#!/usr/bin/env node
// The magpie command. The TypeScript sources are bundled with esbuild (a few
// tens of ms) into dist/run-<hash>/ and run as plain JavaScript: no loader
// hooks on the hot path, and never a stale build.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { build } from 'esbuild'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const result = await build({
  absWorkingDir: root,
  entryPoints: { cli: 'cli/main.ts', worker: 'node/worker/main.ts' },
  outdir: 'dist/run',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: 'inline',
  write: false,
  logLevel: 'warning',
})
const hash = createHash('sha256')
for (const file of result.outputFiles) hash.update(file.path).update(file.contents)
const dir = join(root, 'dist', `run-${hash.digest('hex').slice(0, 12)}`)
if (!existsSync(join(dir, 'cli.js'))) {
  // Written aside and renamed into place, so that concurrent starts never see half a build.
  const staging = `${dir}.${process.pid}.tmp`
  mkdirSync(staging, { recursive: true })
  for (const file of result.outputFiles)
    writeFileSync(join(staging, file.path.split('/').pop()), file.contents)
  try {
    renameSync(staging, dir)
  } catch (err) {
    if (!existsSync(join(dir, 'cli.js'))) throw err
  }
}
await import(pathToFileURL(join(dir, 'cli.js')).href)
