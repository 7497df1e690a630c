/** process-file: one CSV file of sensor readings, summarized per sensor. */
import { type FileSummary, summarize } from '../../process.ts'

export default function processFile(input: { path: string; text: string }): FileSummary & { path: string } {
  return { path: input.path, ...summarize(input.text) }
}
