#!/usr/bin/env node
// The magpie command. The TypeScript sources are bundled with esbuild into
// dist/run-<hash>/ and run as plain JavaScript: no loader hooks on the hot
// path, and never a stale build (see run-build.mjs). A start whose sources
// are as they were at the last build runs that build at once, without
// loading esbuild; a packed magpie runs the build it carries.
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { runBuild } from './run-build.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
let dir
try {
  dir = await runBuild(root)
} catch (err) {
  console.error(`magpie: ${err.message}`)
  process.exit(1)
}
await import(pathToFileURL(join(dir, 'cli.js')).href)
