// npm run size: the SDK as a browser would load it (esbuild, minified), and
// its size gzipped. Importing the SDK pulls in none of the server's packages.
import { gzipSync } from 'node:zlib'
import { build } from 'esbuild'

const result = await build({
  entryPoints: ['sdk/index.ts'],
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  write: false,
  metafile: true,
  // Node's HTTP client, loaded only where the runtime has it.
  external: ['undici', 'node:*'],
  logLevel: 'warning',
})
const code = result.outputFiles[0].contents
const packages = [
  ...new Set(
    Object.keys(result.metafile.inputs)
      .filter((p) => p.includes('node_modules/'))
      .map((p) =>
        p
          .split('node_modules/')[1]
          .split('/')
          .slice(0, p.includes('node_modules/@') ? 2 : 1)
          .join('/'),
      ),
  ),
]
const server = packages.filter((p) =>
  ['hono', 'esbuild', 'prom-client', 'pino', 'ioredis', 'zod', 'lru-cache'].includes(p),
)
const gzipped = gzipSync(code).byteLength
console.log(
  JSON.stringify(
    {
      minified_bytes: code.byteLength,
      gzipped_bytes: gzipped,
      goal_gzipped_bytes: 15_000,
      packages,
      server_packages: server,
    },
    null,
    2,
  ),
)
if (server.length > 0) process.exitCode = 1
