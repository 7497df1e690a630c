import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

const sdk = (file: string) => fileURLToPath(new URL(`./sdk/${file}`, import.meta.url))

export default defineConfig({
  // Function folders imported in local mode find magpie's sources, as they find the package elsewhere.
  resolve: {
    alias: [
      { find: /^magpie$/, replacement: sdk('index.ts') },
      { find: /^magpie\/testing$/, replacement: sdk('testing.ts') },
      { find: /^magpie\/tune$/, replacement: sdk('tune.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts', 'examples/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // The servers tests start log warnings only: one access line per request would bury the test report.
    env: { MAGPIE_LOG_LEVEL: 'warn' },
  },
})
