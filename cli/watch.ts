/**
 * `magpie start --watch`: a function folder saved is deployed again within a
 * second, and its new version said; a build or load error is printed (with
 * esbuild's file and line) and the version before keeps serving.
 */
import { type FSWatcher, watch } from 'node:fs'
import { join, sep } from 'node:path'
import { findEntry } from '../gateway/registry/bundle.ts'
import { FUNCTION_NAME, type FunctionRegistry } from '../gateway/registry/registry.ts'

/** How long after the last change a folder is deployed again, in ms (a save writes several times). */
const SETTLE_MS = 150

export function watchFunctions(dir: string, functions: FunctionRegistry): () => void {
  const timers = new Map<string, ReturnType<typeof setTimeout>>()
  /** Deploys of each folder, one after another. */
  const chains = new Map<string, Promise<void>>()

  async function redeploy(name: string): Promise<void> {
    const folder = join(dir, name)
    if (!findEntry(folder)) return
    const before = functions.get(name)?.version
    try {
      const { record, created } = await functions.deploy(name, folder)
      if (created) console.log(`magpie: deployed ${name} ${record.version}`)
    } catch (err) {
      const still = before ? `; version ${before} still serves` : ''
      console.error(`magpie: ${name} not deployed${still}:\n${(err as Error).message}`)
    }
  }

  let watcher: FSWatcher
  try {
    watcher = watch(dir, { recursive: true }, (_event, file) => {
      const name = file?.split(sep)[0]
      if (!name || !FUNCTION_NAME.test(name) || file?.includes('node_modules')) return
      clearTimeout(timers.get(name))
      timers.set(
        name,
        setTimeout(() => {
          timers.delete(name)
          const next = (chains.get(name) ?? Promise.resolve()).then(() => redeploy(name))
          chains.set(name, next)
        }, SETTLE_MS),
      )
    })
  } catch (err) {
    throw new Error(`--watch cannot watch ${dir}: ${(err as Error).message}`)
  }
  console.log(`magpie: watching ${dir} for changes`)
  return () => {
    watcher.close()
    for (const timer of timers.values()) clearTimeout(timer)
  }
}
