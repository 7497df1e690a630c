import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { Directory } from '../../cluster/head/directory.ts'

const made: Array<{ directory: Directory; dir: string }> = []
afterEach(() => {
  for (const { directory, dir } of made.splice(0)) {
    directory.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

function setUp() {
  let now = 1000
  const dir = mkdtempSync(join(tmpdir(), 'magpie-directory-'))
  const directory = new Directory({ ttlMs: 10_000, spillDir: dir, now: () => now })
  made.push({ directory, dir })
  return { directory, advance: (ms: number) => (now += ms) }
}

describe('the head directory', () => {
  it('keeps small values inline and where the rest are held', () => {
    const { directory } = setUp()
    directory.create('aaaaaaaaaaaaaaaa', 'square')
    directory.locate('aaaaaaaaaaaaaaaa', 'nAbc123', 1)
    directory.settle('aaaaaaaaaaaaaaaa', { value: { kind: 'json', text: '49' } })
    expect(directory.value('aaaaaaaaaaaaaaaa')).toEqual({ kind: 'json', text: '49' })
    expect(directory.lookup('aaaaaaaaaaaaaaaa')).toMatchObject({
      status: 'ready',
      size: 2,
      node: 'nAbc123',
      attempts: 1,
    })
    directory.create('bbbbbbbbbbbbbbbb', null)
    directory.settle('bbbbbbbbbbbbbbbb', {
      held: { node: 'nXyz789', size: 5_000_000, contentType: 'application/octet-stream' },
    })
    expect(directory.value('bbbbbbbbbbbbbbbb')).toBeUndefined()
    expect(directory.lookup('bbbbbbbbbbbbbbbb')).toMatchObject({ node: 'nXyz789', size: 5_000_000 })
  })

  it('settles once, and wakes whoever waits', async () => {
    const { directory } = setUp()
    directory.create('aaaaaaaaaaaaaaaa', null)
    const waited = directory.whenSettled('aaaaaaaaaaaaaaaa', 5000)
    directory.settle('aaaaaaaaaaaaaaaa', { error: { code: 'FUNCTION_ERROR', message: 'boom' } })
    directory.settle('aaaaaaaaaaaaaaaa', { value: { kind: 'json', text: '1' } })
    expect((await waited)?.status).toBe('failed')
    expect(directory.lookup('aaaaaaaaaaaaaaaa')?.error?.message).toBe('boom')
  })

  it('forgets a settled object its TTL after a client last saw it, never an unfinished one', () => {
    const { directory, advance } = setUp()
    directory.create('aaaaaaaaaaaaaaaa', null)
    directory.create('bbbbbbbbbbbbbbbb', null, { ttlMs: 1000 })
    directory.settle('bbbbbbbbbbbbbbbb', { value: { kind: 'json', text: '2' } })
    advance(600)
    expect(directory.seen('bbbbbbbbbbbbbbbb')).toBeDefined()
    advance(600)
    expect(directory.lookup('bbbbbbbbbbbbbbbb')).toBeDefined()
    advance(500)
    expect(directory.lookup('bbbbbbbbbbbbbbbb')).toBeUndefined()
    advance(1_000_000)
    expect(directory.lookup('aaaaaaaaaaaaaaaa')?.status).toBe('pending')
  })
})
