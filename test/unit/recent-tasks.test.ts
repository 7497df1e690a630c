import { describe, expect, it } from 'vitest'
import { parseTaskFilter, RecentTasks } from '../../node/recent-tasks.ts'

describe('RecentTasks', () => {
  it('keeps the last calls in a ring, newest first, and histograms of all of them', () => {
    let now = 1000
    const recent = new RecentTasks(3, () => now)
    for (let i = 0; i < 5; i++) {
      const queuedAt = recent.queued(`call-${i}`, 'work@abc')
      now += 10
      const startedAt = recent.started(`call-${i}`, 'work@abc', i % 2, queuedAt)
      now += 100
      recent.settled(`call-${i}`, 'work@abc', i === 4 ? 'failed' : 'finished', startedAt)
    }
    expect(recent.list().map((r) => r.id)).toEqual(['call-4', 'call-3', 'call-2'])
    expect(recent.list({ state: 'failed' }).map((r) => r.id)).toEqual(['call-4'])
    expect(recent.list({ limit: 1 })).toHaveLength(1)
    expect(recent.get('call-0')).toBeUndefined()
    expect(recent.get('call-3')).toMatchObject({ function: 'work', worker: 1, state: 'finished' })
    // Every call counts in the histograms, kept or not: 5 waits of 10 ms, 5 runs of 100 ms.
    expect(recent.waits.get('work')).toMatchObject({ count: 5 })
    expect(recent.durations.get('work')?.sum).toBeCloseTo(0.5)
    recent.forget('call-3')
    expect(recent.list().map((r) => r.id)).toEqual(['call-4', 'call-2'])
  })

  it('reads its filter from a query, refusing what is not one', () => {
    const q = (o: Record<string, string>) => (k: string) => o[k]
    expect(parseTaskFilter(q({ state: 'running', limit: '5', since: '10' }))).toMatchObject({
      state: 'running',
      limit: 5,
      since: 10,
    })
    expect(() => parseTaskFilter(q({ state: 'asleep' }))).toThrow(/state must be one of/)
    expect(() => parseTaskFilter(q({ limit: '-3' }))).toThrow(/limit must be an integer/)
  })
})
