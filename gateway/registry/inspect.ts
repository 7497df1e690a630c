/**
 * The load check of deployed bundles: each is imported in a worker thread of
 * its own making, never in the gateway's, so that a bundle that throws,
 * hangs or exits on import cannot harm the gateway. It answers, for each,
 * whether its default export is a function (a task) or a class (an actor),
 * and its `config`; or why it cannot be used.
 */
import { Worker } from 'node:worker_threads'

/** How long the bundles of one check may take to import. */
const LOAD_TIMEOUT_MS = 20_000

export type Inspection =
  | { kind: 'function' | 'actor'; config: unknown; methods: string[] }
  | { error: string }

const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const results = []
;(async () => {
  for (const url of workerData.urls) {
    try {
      const mod = await import(url)
      const fn = mod.default
      if (typeof fn !== 'function') {
        results.push({ error: 'it has no default export, or its default export is neither a function nor a class' })
        continue
      }
      const kind = /^class[\\s{]/.test(Function.prototype.toString.call(fn)) ? 'actor' : 'function'
      // An actor's methods: what its prototypes define, but its constructor and names starting with _.
      const methods = new Set()
      if (kind === 'actor') {
        for (let proto = fn.prototype; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
          for (const name of Object.getOwnPropertyNames(proto)) {
            const d = Object.getOwnPropertyDescriptor(proto, name)
            if (name !== 'constructor' && !name.startsWith('_') && d && typeof d.value === 'function') methods.add(name)
          }
        }
      }
      const config = mod.config === undefined ? null : mod.config
      try {
        structuredClone(config)
      } catch {
        results.push({ error: 'its config is not plain data (JSON-like values only)' })
        continue
      }
      results.push({ kind, config, methods: [...methods].sort() })
    } catch (err) {
      results.push({ error: (err && err.stack) ? String(err.stack) : String(err) })
    }
  }
  parentPort.postMessage(results)
})()
`

/** Imports each bundle (file: URLs) in one throwaway worker thread; an answer for each, in order. */
export function inspectBundles(urls: readonly string[]): Promise<Inspection[]> {
  if (urls.length === 0) return Promise.resolve([])
  return new Promise((resolve) => {
    const worker = new Worker(SOURCE, { eval: true, workerData: { urls }, stdout: false, stderr: false })
    let done = false
    const finish = (answers: Inspection[]) => {
      if (done) return
      done = true
      clearTimeout(timer)
      void worker.terminate()
      resolve(answers)
    }
    const all = (error: string) => urls.map(() => ({ error }))
    const timer = setTimeout(
      () => finish(all(`it did not load within ${LOAD_TIMEOUT_MS / 1000} s`)),
      LOAD_TIMEOUT_MS,
    )
    worker.once('message', (answers: Inspection[]) => finish(answers))
    worker.once('error', (err) => finish(all(err.stack ?? String(err))))
    worker.once('exit', (code) =>
      finish(
        all(
          code === 0
            ? 'its top-level code never finished loading (it awaits something that never settles)'
            : `loading it ended its thread (exit code ${code})`,
        ),
      ),
    )
  })
}
