/** This magpie's version, from its package.json: up one folder from the sources, two from a bundle (dist/run-*). */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export function packageVersion(): string {
  for (const up of ['..', '../..']) {
    try {
      const pkg = JSON.parse(readFileSync(join(import.meta.dirname, up, 'package.json'), 'utf8')) as {
        name?: string
        version?: string
      }
      if (pkg.name === 'magpie' && pkg.version) return pkg.version
    } catch {}
  }
  return 'unknown'
}
