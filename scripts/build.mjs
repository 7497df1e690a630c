// Builds the SDK into dist/sdk.js, so that plain JavaScript (Node, Deno, Bun,
// browsers) can import 'magpie' without a TypeScript loader.
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { build } from 'esbuild'

// Chunks of an earlier build would stay beside the new ones.
for (const name of existsSync('dist') ? readdirSync('dist', { withFileTypes: true }) : []) {
  if (name.isFile() && /^chunk-.*\.js(\.map)?$/.test(name.name)) rmSync(`dist/${name.name}`)
}

await build({
  // 'magpie', 'magpie/testing' and 'magpie/tune'; code they share goes to chunks.
  entryPoints: { sdk: 'sdk/index.ts', testing: 'sdk/testing.ts', tune: 'sdk/tune.ts' },
  outdir: 'dist',
  entryNames: '[name]',
  chunkNames: 'chunk-[hash]',
  splitting: true,
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  // The browser build of nanoid uses Web Crypto, which every runtime has.
  conditions: ['browser'],
  // undici where the runtime has it; node:* only in local mode, which reads function folders.
  external: ['undici', 'node:*'],
  sourcemap: true,
  logLevel: 'warning',
})
