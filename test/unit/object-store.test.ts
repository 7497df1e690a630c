import { describe, expect, it } from 'vitest'
import { ObjectStore } from '../../node/store/object-store.ts'

const json = (text: string) => ({ kind: 'json' as const, text })

describe('ObjectStore', () => {
  it('keeps an id once: a second create or put is refused', () => {
    const store = new ObjectStore({ maxBytes: 1 << 20, ttlMs: 1000 })
    expect(store.create('a'.repeat(16), 'f')).toBe(true)
    expect(store.create('a'.repeat(16), 'f')).toBe(false)
    expect(store.put('a'.repeat(16), json('1'))).toBe(false)
  })

  it('wakes waiters when an object settles', async () => {
    const store = new ObjectStore({ maxBytes: 1 << 20, ttlMs: 1000 })
    const id = 'b'.repeat(16)
    store.create(id, 'f', { visible: true })
    const settled = store.whenSettled(id, 5000)
    store.settle(id, { value: json('42') })
    expect((await settled)?.status).toBe('ready')
    expect(store.value(id)).toEqual(json('42'))
    expect(store.lookup(id)?.status).toBe('ready')
  })

  it('waitAny returns at most numReturns settled ids in input order', async () => {
    const store = new ObjectStore({ maxBytes: 1 << 20, ttlMs: 1000 })
    const ids = ['c', 'd', 'e'].map((x) => x.repeat(16))
    for (const id of ids) store.create(id, 'f')
    const waiting = store.waitAny(ids, 2, 5000)
    store.settle(ids[2] as string, { value: json('1') })
    store.settle(ids[0] as string, { error: { code: 'FUNCTION_ERROR', message: 'x' } })
    expect(await waiting).toEqual([ids[0], ids[2]])
  })

  it('forgets visible objects after their TTL, counted from the last read', () => {
    let now = 1_000_000
    const store = new ObjectStore({ maxBytes: 1 << 20, ttlMs: 1000, now: () => now })
    const id = 'f'.repeat(16)
    store.put(id, json('1'), { ttlMs: 50, visible: true })
    now += 40
    expect(store.seen(id)).toBeDefined()
    now += 40
    expect(store.seen(id)).toBeDefined()
    now += 60
    expect(store.lookup(id)).toBeUndefined()
  })

  it('tells waiters of a deleted object that it is gone', async () => {
    const store = new ObjectStore({ maxBytes: 1 << 20, ttlMs: 1000 })
    const id = 'g'.repeat(16)
    store.create(id, 'f')
    const waiting = store.whenSettled(id, 5000)
    expect(store.delete(id)).toBe(true)
    expect(await waiting).toBeUndefined()
  })
})
