// Builds the SDK into dist/sdk.js, so that plain JavaScript (Node, Deno, Bun,
// browsers) can import 'magpie' without a TypeScript loader.
import { build } from 'esbuild'

await build({
  entryPoints: ['sdk/index.ts'],
  outfile: 'dist/sdk.js',
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  // The browser build of nanoid uses Web Crypto, which every runtime has.
  conditions: ['browser'],
  external: ['undici'],
  sourcemap: true,
  logLevel: 'warning',
})
