// The same work as functions/process-file, for Piscina: read a file, summarize it, write the result.
import { readFileSync, writeFileSync } from 'node:fs'
import { register } from 'tsx/esm/api'

register()
const { summarize } = await import('./process.ts')

export default function ({ input, output, path }) {
  const text = readFileSync(input, 'utf8')
  writeFileSync(output, `${JSON.stringify({ path, ...summarize(text) })}\n`)
}
