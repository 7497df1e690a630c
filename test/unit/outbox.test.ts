import { describe, expect, it } from 'vitest'
import { Outbox } from '../../cluster/outbox.ts'
import { backoffDelay } from '../../sdk/backoff.ts'
import { BadRequestError, MagpieError } from '../../sdk/errors.ts'

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms))

describe('backoffDelay', () => {
  it('doubles from the base up to the cap, drawn in the upper half', () => {
    const top = { baseMs: 100, maxMs: 1000, random: () => 0.999999 }
    const bottom = { ...top, random: () => 0 }
    expect([0, 1, 2, 3, 4, 10].map((n) => backoffDelay(n, top))).toEqual([100, 200, 400, 800, 1000, 1000])
    expect([0, 1, 4].map((n) => backoffDelay(n, bottom))).toEqual([50, 100, 500])
  })
})

describe('Outbox', () => {
  it('sends what is pushed in one turn as one batch, in order', async () => {
    const batches: number[][] = []
    const box = new Outbox<number>({ send: async (b) => void batches.push(b), onGiveUp: () => {} })
    for (const n of [1, 2, 3]) box.push(n)
    await box.drained()
    box.push(4)
    await box.drained()
    expect(batches).toEqual([[1, 2, 3], [4]])
  })

  it('sends a failed batch again, ahead of what came since, until it goes', async () => {
    const batches: number[][] = []
    let failures = 2
    const box = new Outbox<number>({
      baseMs: 1,
      maxMs: 4,
      send: async (b) => {
        if (failures-- > 0) throw new Error('connect ECONNREFUSED')
        batches.push(b)
      },
      onGiveUp: () => {
        throw new Error('nothing should be given up')
      },
    })
    box.push(1)
    await tick(0)
    box.push(2)
    await box.drained()
    expect(batches.flat()).toEqual([1, 2])
  })

  it('gives up at once on a refusal, with the cause', async () => {
    const given: Array<[number[], unknown]> = []
    const box = new Outbox<number>({
      send: async () => {
        throw new BadRequestError('no')
      },
      onGiveUp: (items, cause) => given.push([items, cause]),
    })
    box.push(1)
    box.push(2)
    await box.drained()
    expect(given).toHaveLength(1)
    expect(given[0]?.[0]).toEqual([1, 2])
    expect((given[0]?.[1] as MagpieError | undefined)?.code).toBe('BAD_REQUEST')
  })

  it('gives up on a destination that fails past giveUpMs, once per batch', async () => {
    let now = 0
    const given: number[][] = []
    let tries = 0
    const box = new Outbox<number>({
      baseMs: 1,
      maxMs: 2,
      giveUpMs: 100,
      now: () => now,
      send: async () => {
        tries += 1
        now += 30
        throw new MagpieError('unavailable', { code: 'INTERNAL' })
      },
      onGiveUp: (items) => given.push(items),
    })
    box.push(7)
    await box.drained()
    expect(given).toEqual([[7]])
    expect(tries).toBeGreaterThanOrEqual(4)
  })

  it('holds at most maxItems, giving up the oldest beyond', async () => {
    const given: number[][] = []
    const box = new Outbox<number>({
      maxItems: 2,
      send: async () => {},
      onGiveUp: (items) => given.push(items),
    })
    for (const n of [1, 2, 3]) box.push(n)
    expect(given).toEqual([[1]])
    await box.drained()
  })

  it('with gatherMs, sends the first at once, then what comes within the window together', async () => {
    const batches: Array<{ at: number; items: number[] }> = []
    const started = performance.now()
    const box = new Outbox<number>({
      gatherMs: 60,
      send: async (items) => void batches.push({ at: performance.now() - started, items }),
      onGiveUp: () => {},
    })
    box.push(1)
    await tick(5)
    box.push(2)
    await tick(10)
    box.push(3)
    await tick(100)
    expect(batches.map((b) => b.items)).toEqual([[1], [2, 3]])
    expect(batches[0]?.at).toBeLessThan(30)
    expect(batches[1]?.at).toBeGreaterThanOrEqual(55)
    await box.drained()
  })

  it('sends what waits for the window at once when told nothing more is coming (flushSoon)', async () => {
    const batches: number[][] = []
    const box = new Outbox<number>({
      gatherMs: 10_000,
      send: async (b) => void batches.push(b),
      onGiveUp: () => {},
    })
    box.push(1)
    await tick(5)
    box.push(2)
    box.push(3)
    await tick(20)
    expect(batches).toEqual([[1]])
    box.flushSoon()
    await box.drained()
    expect(batches).toEqual([[1], [2, 3]])
  })
})
