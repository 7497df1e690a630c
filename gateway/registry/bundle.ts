/**
 * Bundles a function folder into one ES module with esbuild: its own imports
 * and dependencies inlined, and `import ... from 'magpie'` bound to magpie's
 * SDK, whose in-function API the worker connects to the node at run time.
 */
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Plugin } from 'esbuild'

export const ENTRY_NAMES = ['index.ts', 'index.mts', 'index.js', 'index.mjs'] as const

/** The folder of magpie's package.json, from the sources or from a build in dist/. */
function packageRoot(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json')
    if (
      existsSync(manifest) &&
      (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'magpie'
    ) {
      return dir
    }
    if (dirname(dir) === dir) throw new Error('cannot find the magpie package folder')
  }
}

const sdkEntry = resolve(packageRoot(), 'sdk/index.ts')
const require = createRequire(import.meta.url)

/** The entry file of a function folder, or undefined if it has none. */
export function findEntry(dir: string): string | undefined {
  for (const name of ENTRY_NAMES) {
    const file = join(dir, name)
    if (existsSync(file)) return file
  }
  return undefined
}

const magpieImports: Plugin = {
  name: 'magpie-imports',
  setup(b) {
    b.onResolve({ filter: /^magpie$/ }, () => ({ path: sdkEntry }))
    b.onResolve({ filter: /^magpie\/(tune|testing)$/ }, (args) => ({
      path: resolve(dirname(sdkEntry), `${args.path.slice('magpie/'.length)}.ts`),
    }))
    // The SDK loads undici lazily for connect(); point it at magpie's own copy.
    b.onResolve({ filter: /^undici$/ }, () => ({ path: require.resolve('undici'), external: true }))
  },
}

export interface Bundle {
  code: string
  /** First 12 hex digits of the SHA-256 of the code. */
  version: string
}

/** Whether this process has bundled anything (and so started esbuild's service). */
let bundled = false

/** Bundles the folder's entry; throws esbuild's message if it does not build. */
export async function bundleFunction(entry: string): Promise<Bundle> {
  // Loaded when first needed: a node, or any command but start, never bundles.
  const { build } = await import('esbuild')
  bundled = true
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    write: false,
    logLevel: 'silent',
    sourcemap: 'inline',
    plugins: [magpieImports],
    banner: {
      js: "import { createRequire as __magpieRequire } from 'node:module'; const require = __magpieRequire(import.meta.url);",
    },
  })
  const code = result.outputFiles[0]?.text ?? ''
  return { code, version: versionOf(code) }
}

/** The version of a bundle: the first 12 hex digits of the SHA-256 of its code. */
export function versionOf(code: string): string {
  return createHash('sha256').update(code).digest('hex').slice(0, 12)
}

/**
 * Stops esbuild's service process once every folder is bundled, so that a
 * running platform does not keep it (tens of MiB) for nothing; a later
 * bundle starts it again.
 */
export async function stopBundler(): Promise<void> {
  if (!bundled) return
  const { stop } = await import('esbuild')
  await stop()
}
