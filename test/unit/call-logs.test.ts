import { describe, expect, it } from 'vitest'
import { CallLogs, type LogChunk } from '../../node/call-logs.ts'
import { LogPrinter } from '../../node/log-printer.ts'

const chunk = (t: number, text: string): LogChunk => ({ t, stream: 'stdout', text })

describe('CallLogs', () => {
  it('keeps lines within its bytes, dropping the oldest calls whole and remembering them', () => {
    const logs = new CallLogs({ maxBytes: 2000, maxAgeMs: 60_000, now: () => 0 })
    logs.add('a', 'f', chunk(1, 'x'.repeat(600)))
    logs.add('b', 'f', chunk(2, 'y'.repeat(600)))
    expect(logs.read('a').chunks).toHaveLength(1)
    logs.add('c', 'f', chunk(3, 'z'.repeat(600)))
    expect(logs.read('a')).toEqual({ chunks: [], gone: ['a'] })
    expect(logs.read('c').chunks[0]?.text).toHaveLength(600)
    expect(logs.bytes).toBeLessThanOrEqual(2000)
  })

  it('drops the lines of calls silent for longer than its age', () => {
    let now = 0
    const logs = new CallLogs({ maxBytes: 1e6, maxAgeMs: 1000, now: () => now })
    logs.add('a', 'f', chunk(0, 'old\n'))
    now = 900
    logs.add('b', 'f', chunk(900, 'new\n'))
    now = 1500
    expect(logs.read('a').gone).toEqual(['a'])
    expect(logs.read('b').chunks).toHaveLength(1)
  })

  it('reads and follows the calls under a call, down the tree', () => {
    const logs = new CallLogs({ maxBytes: 1e6, maxAgeMs: 60_000, now: () => 0 })
    logs.link('root', 'kid')
    logs.link('kid', 'grandkid')
    const seen: string[] = []
    let ended = false
    logs.follow('root', { chunk: (id, c) => seen.push(`${id}:${c.text}`), end: () => (ended = true) }, true)
    logs.add('grandkid', 'g', chunk(1, 'deep'))
    logs.add('root', 'r', chunk(2, 'top'))
    expect(seen).toEqual(['grandkid:deep', 'root:top'])
    expect(logs.read('root', true).chunks.map((c) => c.id)).toEqual(['grandkid', 'root'])
    expect(logs.read('root', false).chunks.map((c) => c.id)).toEqual(['root'])
    logs.settled('root')
    expect(ended).toBe(true)
  })
})

describe('LogPrinter', () => {
  it('prefixes lines with their function and call, and holds back a chatty function past its rate', () => {
    let out = ''
    let err = ''
    let now = 0
    const printer = new LogPrinter({
      linesPerS: 10,
      burst: 5,
      out: { write: (t: string) => (out += t) },
      err: { write: (t: string) => (err += t) },
      now: () => now,
    })
    printer.print('id1', 'noisy@abc', 'stdout', Array.from({ length: 8 }, (_, i) => `line ${i}`).join('\n'))
    printer.print('id2', 'quiet', 'stderr', 'hello\n')
    expect(out.split('\n').filter(Boolean)).toEqual([0, 1, 2, 3, 4].map((i) => `[noisy id1] line ${i}`))
    expect(err).toBe('[quiet id2] hello\n')
    printer.report()
    expect(err).toContain('3 lines of noisy not shown here')
    now = 1000
    printer.print('id1', 'noisy@abc', 'stdout', 'again\n')
    expect(out).toContain('[noisy id1] again\n')
    printer.close()
  })
})
