// The CLI's build: the TypeScript sources bundled with esbuild into
// dist/run-<hash>/ (cli.js and worker.js), found again through
// dist/run-index.json. A clone rebuilds when its sources change (their paths,
// sizes and modification times); a packed magpie carries its build, made by
// `npm pack` (scripts/prebuild-run.mjs), and never writes into its folder.
import { createHash } from 'node:crypto'
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'

const SOURCES = ['cli', 'gateway', 'cluster', 'node', 'sdk']

/** A fingerprint of the sources as they are on disk: paths, sizes, modification times. */
function fingerprint(root) {
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

/**
 * The folder of the build to run: the packed one, or the last one if the
 * sources are as they were, else a new one (`prebuilt`: a build for a package,
 * used whatever the sources' times).
 */
export async function runBuild(root, { prebuilt = false } = {}) {
  const index = join(root, 'dist', 'run-index.json')
  let known
  try {
    known = JSON.parse(readFileSync(index, 'utf8'))
  } catch {
    // No build yet, or a damaged index: build.
  }
  const ready = known && existsSync(join(root, 'dist', known.dir, 'cli.js'))
  // A clone (it has .git) rebuilds what it changed, even after a pack built into it.
  if (ready && known.prebuilt && !prebuilt && !existsSync(join(root, '.git')))
    return join(root, 'dist', known.dir)
  const seen = fingerprint(root)
  if (ready && known.fingerprint === seen && !prebuilt) return join(root, 'dist', known.dir)

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
    // Beside the code, not in it: a process parses its code at every start, and the map
    // is read only by a Node started with --enable-source-maps.
    sourcemap: 'linked',
    write: false,
    logLevel: 'warning',
  })
  const hash = createHash('sha256')
  for (const file of result.outputFiles) hash.update(file.path).update(file.contents)
  // A package's build has one name, that its files list names.
  const name = prebuilt ? 'run-packed' : `run-${hash.digest('hex').slice(0, 12)}`
  const dir = join(root, 'dist', name)
  try {
    if (prebuilt || !existsSync(join(dir, 'cli.js'))) {
      rmSync(`${dir}.${process.pid}.tmp`, { recursive: true, force: true })
      // Written aside and renamed into place, so that concurrent starts never see half a build.
      const staging = `${dir}.${process.pid}.tmp`
      mkdirSync(staging, { recursive: true })
      for (const file of result.outputFiles)
        writeFileSync(join(staging, file.path.split('/').pop()), file.contents)
      if (prebuilt) rmSync(dir, { recursive: true, force: true })
      try {
        renameSync(staging, dir)
      } catch (err) {
        if (!existsSync(join(dir, 'cli.js'))) throw err
      }
    }
    const staged = `${index}.${process.pid}.tmp`
    writeFileSync(staged, JSON.stringify({ fingerprint: seen, dir: name, ...(prebuilt ? { prebuilt } : {}) }))
    renameSync(staged, index)
    dropOldBuilds(join(root, 'dist'), name)
  } catch (err) {
    if (err.code !== 'EACCES' && err.code !== 'EROFS' && err.code !== 'EPERM') throw err
    throw new Error(
      `magpie cannot write its build into ${join(root, 'dist')} (${err.code}): install a packed magpie ` +
        '(npm pack builds it in), or run it from a clone it may write to',
    )
  }
  return dir
}

/** Builds kept beside the newest: a platform started before a rebuild still runs its own (its threads load it). */
const KEPT_BUILDS = 8

/** Removes all but the newest builds of a clone (each source change makes one). */
function dropOldBuilds(dist, current) {
  const builds = readdirSync(dist)
    .filter((name) => /^run-[0-9a-f]{12}$/.test(name) && name !== current)
    .map((name) => ({ name, at: statSync(join(dist, name)).mtimeMs }))
    .sort((a, b) => b.at - a.at)
  for (const { name } of builds.slice(KEPT_BUILDS)) rmSync(join(dist, name), { recursive: true, force: true })
}
