/** The SDK's line splitter for streamed answers: lines cut across chunks, many in one chunk, a last line without its newline. */
import { describe, expect, it } from 'vitest'
import { lines } from '../../sdk/transport.ts'

async function split(chunks: string[]): Promise<string[]> {
  async function* from() {
    for (const c of chunks) yield c
  }
  const out: string[] = []
  for await (const line of lines(from())) out.push(line)
  return out
}

describe('lines', () => {
  it('joins a line cut across chunks and splits many lines in one chunk', async () => {
    expect(await split(['{"a":', '1}\n{"b":2}\n{"c"', ':3}\n'])).toEqual(['{"a":1}', '{"b":2}', '{"c":3}'])
    expect(await split(['x\n\ny\n'])).toEqual(['x', '', 'y'])
  })

  it('gives a last line that has no newline', async () => {
    expect(await split(['a\nb'])).toEqual(['a', 'b'])
    expect(await split([])).toEqual([])
  })
})
