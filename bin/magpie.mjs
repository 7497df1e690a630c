#!/usr/bin/env node
// The magpie command. The TypeScript sources are bundled with esbuild into
// dist/run-<hash>/ and run as plain JavaScript: no loader hooks on the hot
// path, and never a stale build. A start whose sources are as they were at
// the last build (same paths, sizes and modification times) runs that build
// at once, without loading esbuild.
import { createHash } from 'node:crypto'
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const SOURCES = ['cli', 'gateway', 'cluster', 'node', 'sdk']

/** A fingerprint of the sources as they are on disk: paths, sizes, modification times. */
function fingerprint() {
  const hash = createHash('sha256')
  const walk = (dir) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const path = `${dir}/${entry.name}`
      if (entry.isDirectory()) walk(path)
      else if (/\.(ts|mts|js|mjs|json)$/.test(entry.name)) {
        const { size, mtimeMs } = statSync(join(root, path))
        hash.update(`${path}\0${size}\0${mtimeMs}\n`)
      }
    }
  }
  for (const dir of SOURCES) walk(dir)
  for (const file of ['package.json', 'tsconfig.json']) {
    if (existsSync(join(root, file))) hash.update(`${file}\0${statSync(join(root, file)).mtimeMs}\n`)
  }
  return hash.digest('hex').slice(0, 16)
}

const index = join(root, 'dist', 'run-index.json')
const seen = fingerprint()
let dir
try {
  const known = JSON.parse(readFileSync(index, 'utf8'))
  if (known.fingerprint === seen && existsSync(join(root, 'dist', known.dir, 'cli.js')))
    dir = join(root, 'dist', known.dir)
} catch {
  // No build yet, or a damaged index: build.
}

if (!dir) {
  const { build } = await import('esbuild')
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
  const name = `run-${hash.digest('hex').slice(0, 12)}`
  dir = join(root, 'dist', name)
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
  const staged = `${index}.${process.pid}.tmp`
  writeFileSync(staged, JSON.stringify({ fingerprint: seen, dir: name }))
  renameSync(staged, index)
}
await import(pathToFileURL(join(dir, 'cli.js')).href)
