/**
 * `magpie map FUNCTION --inputs GLOB --out DIR`: calls a deployed function
 * once per input file, at most `--concurrency` at a time, and writes each
 * result under DIR. What is done is kept in DIR/.magpie-map.ndjson, keyed by
 * input path and content hash: run again, it does only what is new, changed
 * or failed. A progress bar on stderr; a JSON summary on stdout.
 */
import { createHash } from 'node:crypto'
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { connect } from '../sdk/connect.ts'
import { ProgressBar } from '../sdk/progress.ts'

export interface MapOptions {
  inputs: string[]
  out: string
  /** Calls in flight at once (default 64). */
  concurrency: number
  /** Pass each file as raw bytes instead of `{ path, text }`. */
  bytes: boolean
}

interface Done {
  input: string
  hash: string
  ok: boolean
  output?: string
  error?: string
}

export const MANIFEST = '.magpie-map.ndjson'

/** Where an input's result goes: its path under DIR, kept inside DIR whatever the glob. */
function outputPath(input: string, bytes: boolean): string {
  const safe = input
    .split(sep)
    .map((part) => (part === '..' ? '_up' : part))
    .join(sep)
  return `${safe}${bytes ? '.out' : '.json'}`
}

function readManifest(file: string): Map<string, Done> {
  const done = new Map<string, Done>()
  if (!existsSync(file)) return done
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue
    try {
      const entry = JSON.parse(line) as Done
      if (typeof entry.input === 'string') done.set(entry.input, entry)
    } catch {
      // A line cut short when a run was stopped: that input runs again.
    }
  }
  return done
}

export async function runMap(
  url: string,
  token: string | undefined,
  fn: string | undefined,
  options: MapOptions,
): Promise<number> {
  if (!fn) throw new Error('usage: magpie map FUNCTION --inputs GLOB --out DIR')
  if (options.inputs.length === 0) throw new Error('--inputs GLOB is required')
  if (!options.out) throw new Error('--out DIR is required')
  if (!Number.isInteger(options.concurrency) || options.concurrency < 1) {
    throw new Error('--concurrency must be a positive integer')
  }
  const cwd = process.cwd()
  const { glob } = await import('tinyglobby')
  const files = (await glob(options.inputs, { cwd, onlyFiles: true, absolute: true })).sort()
  if (files.length === 0) throw new Error(`no files match ${options.inputs.join(' ')}`)
  const out = resolve(options.out)
  mkdirSync(out, { recursive: true })
  const manifestFile = join(out, MANIFEST)
  const before = readManifest(manifestFile)

  const mp = connect(url, { token })
  const remote = mp.remote(fn)
  const bar = new ProgressBar(files.length, { label: 'files' })
  const failures: Done[] = []
  let next = 0
  let finished = 0
  let skipped = 0
  let ran = 0
  const started = Date.now()

  const one = async (file: string): Promise<void> => {
    const input = relative(cwd, file)
    const content = await readFile(file)
    const hash = createHash('sha256').update(content).digest('hex').slice(0, 32)
    const output = outputPath(input, options.bytes)
    const earlier = before.get(input)
    if (earlier?.ok && earlier.hash === hash && existsSync(join(out, output))) {
      skipped++
      return
    }
    let entry: Done
    try {
      const arg = options.bytes ? new Uint8Array(content) : { path: input, text: content.toString('utf8') }
      const value = await mp.get(remote.remote(arg))
      const target = join(out, output)
      mkdirSync(dirname(target), { recursive: true })
      writeFileSync(target, value instanceof Uint8Array ? value : `${JSON.stringify(value)}\n`)
      entry = { input, hash, ok: true, output }
      ran++
    } catch (err) {
      entry = { input, hash, ok: false, error: (err as Error).message }
      failures.push(entry)
    }
    appendFileSync(manifestFile, `${JSON.stringify(entry)}\n`)
  }

  const lane = async (): Promise<void> => {
    while (next < files.length) {
      const file = files[next++] as string
      await one(file)
      bar.update(++finished, failures.length)
    }
  }
  try {
    await Promise.all(Array.from({ length: Math.min(options.concurrency, files.length) }, lane))
  } finally {
    bar.done()
    await mp.close()
  }
  for (const f of failures) console.error(`failed  ${f.input}: ${f.error}`)
  const seconds = (Date.now() - started) / 1000
  console.log(
    JSON.stringify({
      function: fn,
      files: files.length,
      done: ran,
      skipped,
      failed: failures.length,
      seconds: Math.round(seconds * 1000) / 1000,
      files_per_s: Math.round((ran + failures.length) / Math.max(seconds, 1e-3)),
      out,
    }),
  )
  return failures.length > 0 ? 1 : 0
}
