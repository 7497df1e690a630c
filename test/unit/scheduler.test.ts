import { describe, expect, it } from 'vitest'
import { WorkScheduler } from '../../node/scheduler/scheduler.ts'
import { pickHome, pickVictim } from '../../node/scheduler/steal.ts'

describe('pickVictim', () => {
  it('picks the fullest other deque', () => {
    expect(pickVictim([0, 3, 5, 1], 0)).toBe(2)
  })
  it('never picks the thief itself, and -1 when nobody has work', () => {
    expect(pickVictim([4, 0], 0)).toBe(-1)
    expect(pickVictim([0, 0, 0], 1)).toBe(-1)
  })
})

describe('pickHome', () => {
  it('picks the worker with the least queued plus running work', () => {
    expect(pickHome([2, 1, 1], [1, 1, 0])).toBe(2)
    expect(pickHome([0, 0], [0, 0])).toBe(0)
  })
})

describe('WorkScheduler', () => {
  it('runs nested work depth first on the worker that made it', () => {
    const s = new WorkScheduler<string>(2)
    s.push('a', 0)
    s.push('b', 0)
    expect(s.take(0)).toBe('b')
    expect(s.take(0)).toBe('a')
    expect(s.take(0)).toBeUndefined()
  })

  it('lets an idle worker steal the oldest work of the fullest deque', () => {
    const s = new WorkScheduler<string>(3)
    for (const t of ['old', 'mid', 'new']) s.push(t, 0)
    s.push('other', 2)
    expect(s.take(1)).toBe('old')
    expect(s.steals).toBe(1)
    expect(s.take(0)).toBe('new')
    expect(s.queued).toBe(2)
  })

  it('spreads top-level work over the least busy workers', () => {
    const s = new WorkScheduler<string>(2)
    s.push('x', undefined, [1, 0])
    expect(s.lengths()).toEqual([0, 1])
    s.push('y', undefined, [0, 0])
    expect(s.lengths()).toEqual([1, 1])
  })

  it('removes queued work on request', () => {
    const s = new WorkScheduler<string>(2)
    s.push('keep', 0)
    s.push('drop', 1)
    expect(s.removeWhere((t) => t === 'drop')).toEqual(['drop'])
    expect(s.queued).toBe(1)
  })
})

describe('WorkScheduler.giveAway', () => {
  it('gives the preferred work first, then the oldest, never what the thief cannot run', () => {
    const s = new WorkScheduler<string>(2)
    for (const t of ['a1', 'a2', 'gpu', 'a3']) s.push(t, 0)
    s.push('b1', 1)
    const given = s.giveAway(
      3,
      (t) => t === 'a3',
      (t) => t !== 'gpu',
    )
    expect(given[0]).toBe('a3')
    expect(given).toHaveLength(3)
    expect(given).not.toContain('gpu')
    expect(s.queued).toBe(2)
  })
})
