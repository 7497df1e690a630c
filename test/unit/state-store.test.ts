/** The head's state in a folder: changes kept across a reopen, a torn last line skipped, the file written anew compact. */
import { appendFileSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { FolderState } from '../../cluster/head/state/folder.ts'
import { tempDirs } from '../temp-dirs.ts'

const tempDir = tempDirs('magpie-state-')

describe('FolderState', () => {
  it('reads back what was set and not deleted, after the last change was flushed', async () => {
    const dir = tempDir()
    const first = new FolderState(dir)
    expect((await first.load()).calls.size).toBe(0)
    first.set('calls', 'a', '1')
    first.set('calls', 'b', '2')
    first.set('objects', 'a', 'x')
    first.delete('calls', 'a')
    first.set('calls', 'b', '3')
    await first.flushed()
    // Killed here: nothing closed.
    const again = await new FolderState(dir).load()
    expect([...again.calls]).toEqual([['b', '3']])
    expect([...again.objects]).toEqual([['a', 'x']])
    await first.close()
  })

  it('skips a last line torn by a kill, and keeps the file private', async () => {
    const dir = tempDir()
    const state = new FolderState(dir)
    await state.load()
    state.set('meta', 'secret', 's3cret-s3cret-s3cret')
    await state.close()
    appendFileSync(join(dir, 'head-state.jsonl'), '["calls","torn","{\\"id')
    const again = new FolderState(dir)
    const kept = await again.load()
    expect(kept.meta.get('secret')).toBe('s3cret-s3cret-s3cret')
    expect(kept.calls.size).toBe(0)
    expect(readFileSync(join(dir, 'head-state.jsonl'), 'utf8')).not.toContain('torn')
    expect(statSync(join(dir, 'head-state.jsonl')).mode & 0o777).toBe(0o600)
    await again.close()
  })

  it('writes the file anew once it is mostly changes that no longer count', async () => {
    const dir = tempDir()
    const state = new FolderState(dir)
    await state.load()
    const value = 'v'.repeat(100_000)
    for (let i = 0; i < 400; i++) {
      state.set('objects', `id${i}`, value)
      state.delete('objects', `id${i}`)
      if (i % 50 === 0) await state.flushed()
    }
    state.set('objects', 'last', 'kept')
    await state.flushed()
    // 40 MB were written in all; what is left is one small entry.
    expect(statSync(join(dir, 'head-state.jsonl')).size).toBeLessThan(20 * 2 ** 20)
    expect([...(await new FolderState(dir).load()).objects]).toEqual([['last', 'kept']])
    await state.close()
  })
})
