// Builds the CLI into the package (dist/run-*, marked prebuilt), for `npm pack`:
// an installed magpie then runs it and writes nothing into its own folder.
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runBuild } from '../bin/run-build.mjs'

const dir = await runBuild(join(dirname(fileURLToPath(import.meta.url)), '..'), { prebuilt: true })
console.log(`built ${dir}`)
