/**
 * A batch of files, as the Ray tutorial does it: make N small CSV files,
 * process each with the deployed function `process-file`, write each result,
 * and show a progress bar with its rate and time left. One file is broken on
 * purpose: it is reported at the end with its error, and the rest finishes.
 * Then the same work by a plain loop in this process and by Piscina on the
 * same cores, and one JSON line with the figures of all three.
 *
 *   npm run example:batch -- --files 10000 [--url URL] [--out DIR] [--cpus N]
 *
 * Without --url it starts `magpie start` on this machine (and stops it);
 * with --url it deploys process-file there. The files travel with the calls,
 * so a platform on other machines works the same.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { Piscina } from 'piscina'
import { type Client, connect, type ObjectRef, ProgressBar } from '../../sdk/index.ts'
import { withPlatform } from '../lib/platform.ts'
import { makeCsv, summarize } from './process.ts'

const { values } = parseArgs({
  options: {
    files: { type: 'string', default: '10000' },
    rows: { type: 'string', default: '80' },
    url: { type: 'string' },
    out: { type: 'string' },
    cpus: { type: 'string', default: String(availableParallelism()) },
  },
})
const count = Number(values.files)
const cpus = Number(values.cpus)
if (!Number.isInteger(count) || count < 1) throw new Error('--files must be a positive integer')
const HERE = import.meta.dirname
/** Calls submitted ahead of the results being read: enough to keep every core busy, bounded in memory. */
const CHUNK = 1000

// ---- the input files ----

const work = values.out ? resolve(values.out) : mkdtempSync(join(tmpdir(), 'magpie-batch-'))
const inputs = join(work, 'input')
mkdirSync(inputs, { recursive: true })
const names = Array.from({ length: count }, (_, i) => `readings-${String(i).padStart(5, '0')}.csv`)
const broken = Math.min(7, count - 1)
names.forEach((name, i) => {
  const csv = makeCsv(i, Number(values.rows))
  // One broken file: a reading that is not a number.
  writeFileSync(
    join(inputs, name),
    i === broken ? csv.replace(/\n(s\d),(\d+),[\d.]+\n/, '\n$1,$2,n/a\n') : csv,
  )
})
const outputsOf = (run: string) => {
  const dir = join(work, run)
  mkdirSync(dir, { recursive: true })
  return dir
}

// ---- magpie ----

async function withMagpie(mp: Client) {
  const out = outputsOf('magpie')
  const processFile = mp.remote('process-file')
  // Small files: synchronous reads and writes are the cheapest, here as in the plain loop.
  const submit = async (chunk: string[]) =>
    chunk.map((name) => {
      const text = readFileSync(join(inputs, name), 'utf8')
      return [name, processFile.remote({ path: name, text })] as const
    })
  const bar = new ProgressBar(names.length, { label: 'files' })
  const failures: Array<{ file: string; error: string }> = []
  const started = performance.now()
  let done = 0
  const chunks = Array.from({ length: Math.ceil(names.length / CHUNK) }, (_, i) =>
    names.slice(i * CHUNK, (i + 1) * CHUNK),
  )
  // The next chunk is submitted while this one's results are read.
  let next = submit(chunks[0] as string[])
  for (let i = 0; i < chunks.length; i++) {
    const submitted = await next
    if (i + 1 < chunks.length) next = submit(chunks[i + 1] as string[])
    const nameOf = new Map<ObjectRef, string>(submitted.map(([name, ref]) => [ref, name]))
    for await (const result of mp.settled(submitted.map(([, ref]) => ref))) {
      const name = nameOf.get(result.ref) as string
      if (result.ok) writeFileSync(join(out, `${name}.json`), `${JSON.stringify(result.value)}\n`)
      else failures.push({ file: name, error: result.error.message })
      bar.update(++done, failures.length)
    }
  }
  bar.done()
  return { seconds: (performance.now() - started) / 1000, failures }
}

// ---- the same work without magpie ----

async function plainLoop() {
  const out = outputsOf('plain')
  let failed = 0
  const started = performance.now()
  for (const name of names) {
    try {
      const text = readFileSync(join(inputs, name), 'utf8')
      writeFileSync(join(out, `${name}.json`), `${JSON.stringify({ path: name, ...summarize(text) })}\n`)
    } catch {
      failed++
    }
  }
  return { seconds: (performance.now() - started) / 1000, failed }
}

async function withPiscina() {
  const out = outputsOf('piscina')
  const pool = new Piscina({ filename: join(HERE, 'piscina-worker.mjs'), minThreads: cpus, maxThreads: cpus })
  await pool.run({
    input: join(inputs, names[0] as string),
    output: join(out, 'warm-up.json'),
    path: 'warm-up',
  })
  let failed = 0
  const started = performance.now()
  await Promise.all(
    names.map((name) =>
      pool
        .run({ input: join(inputs, name), output: join(out, `${name}.json`), path: name })
        .catch(() => failed++),
    ),
  )
  const seconds = (performance.now() - started) / 1000
  await pool.destroy()
  return { seconds, failed }
}

// ---- the run ----

await withPlatform({ url: values.url, functions: join(HERE, 'functions'), cpus }, async (url) => {
  const mp = connect(url)
  // Warm-up: the function's code loaded on every thread.
  await mp.get(
    Array.from({ length: 4 * cpus }, () =>
      mp.remote('process-file').remote({ path: 'warm-up', text: makeCsv(0, 5) }),
    ),
  )
  const magpie = await withMagpie(mp)
  await mp.close()
  for (const f of magpie.failures) console.error(`failed  ${f.file}: ${f.error}`)
  const plain = await plainLoop()
  const piscina = await withPiscina()
  const rate = (seconds: number) => Math.round(names.length / seconds)
  const round = (x: number) => Math.round(x * 1000) / 1000
  console.log(
    JSON.stringify({
      files: names.length,
      failed: magpie.failures.length,
      seconds: round(magpie.seconds),
      files_per_s: rate(magpie.seconds),
      cpus,
      plain_loop: { seconds: round(plain.seconds), files_per_s: rate(plain.seconds), failed: plain.failed },
      piscina: {
        seconds: round(piscina.seconds),
        files_per_s: rate(piscina.seconds),
        failed: piscina.failed,
      },
      vs_plain_loop: round(plain.seconds / magpie.seconds),
      vs_piscina: round(piscina.seconds / magpie.seconds),
      out: values.out ? work : undefined,
    }),
  )
}).finally(() => {
  if (!values.out) rmSync(work, { recursive: true, force: true })
})
