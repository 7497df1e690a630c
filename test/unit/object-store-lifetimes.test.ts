import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { heldIdsInJson, ObjectStore } from '../../node/store/object-store.ts'
import { SpillStore } from '../../node/store/spill.ts'
import { ObjectStoreFullError } from '../../sdk/errors.ts'

const json = (text: string) => ({ kind: 'json' as const, text })
const bytes = (size: number, fill: number) => ({
  kind: 'bytes' as const,
  bytes: new Uint8Array(size).fill(fill),
})
const id = (n: number) => `obj${String(n).padStart(13, '0')}`

const folders: string[] = []
function spillStore(limitBytes = Number.POSITIVE_INFINITY): { spill: SpillStore; dir: string } {
  const dir = join(mkdtempSync(join(tmpdir(), 'magpie-spill-test-')), 'spill')
  folders.push(dir, join(dir, '..'))
  return { spill: new SpillStore({ dir, limitBytes }), dir }
}
afterEach(() => {
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true })
})

describe('ObjectStore memory and disk', () => {
  it('spills the least recently used values past its memory and reads them back byte-exact', () => {
    const { spill } = spillStore()
    const store = new ObjectStore({ maxBytes: 3 * 1024 * 1024, ttlMs: 60_000, spill })
    for (let i = 0; i < 10; i++) store.put(id(i), bytes(1024 * 1024, i), { visible: true })
    const stats = store.stats()
    expect(stats.bytes).toBeLessThanOrEqual(3 * 1024 * 1024)
    expect(stats.spilled.count).toBeGreaterThanOrEqual(7)
    for (let i = 0; i < 10; i++) {
      const value = store.value(id(i))
      expect(value?.kind).toBe('bytes')
      const got = (value as { bytes: Uint8Array }).bytes
      expect(got.byteLength).toBe(1024 * 1024)
      expect(got.every((b) => b === i)).toBe(true)
    }
    expect(store.stats().restores.count).toBeGreaterThanOrEqual(7)
    expect(store.stats().bytes).toBeLessThanOrEqual(3 * 1024 * 1024)
    store.close()
  })

  it('keeps small JSON values in shared segment files and deletes files once their values are freed', () => {
    const { spill, dir } = spillStore()
    const store = new ObjectStore({ maxBytes: 4096, ttlMs: 60_000, spill })
    for (let i = 0; i < 200; i++)
      store.put(id(i), json(JSON.stringify({ i, pad: 'x'.repeat(100) })), { visible: true })
    expect(store.stats().spilled.count).toBeGreaterThan(150)
    expect(readdirSync(dir).length).toBe(1)
    expect(JSON.parse((store.value(id(3)) as { text: string }).text).i).toBe(3)
    for (let i = 0; i < 200; i++) store.delete(id(i))
    expect(store.stats()).toMatchObject({ count: 0, bytes: 0, spilled: { count: 0, bytes: 0 } })
    store.close()
  })

  it('refuses a value with OBJECT_STORE_FULL when memory and disk are full, and keeps what it has', () => {
    const { spill } = spillStore(2 * 1024 * 1024)
    const store = new ObjectStore({ maxBytes: 1024 * 1024 + 4096, ttlMs: 60_000, spill })
    store.put(id(1), bytes(1024 * 1024, 1), { visible: true })
    store.put(id(2), bytes(1024 * 1024, 2), { visible: true })
    store.put(id(3), bytes(1024 * 1024, 3), { visible: true })
    expect(() => store.put(id(4), bytes(1024 * 1024, 4), { visible: true })).toThrow(ObjectStoreFullError)
    expect(store.has(id(4))).toBe(false)
    for (const n of [1, 2, 3]) expect((store.value(id(n)) as { bytes: Uint8Array }).bytes[0]).toBe(n)
    // A result that does not fit fails its object instead.
    store.create(id(5), 'f', { visible: true })
    store.settle(id(5), { value: bytes(1024 * 1024, 5) })
    expect(store.lookup(id(5))).toMatchObject({ status: 'failed', error: { code: 'OBJECT_STORE_FULL' } })
    store.close()
  })

  it('keeps a value bigger than its memory on disk only, and reads it from there every time', () => {
    const { spill } = spillStore()
    const store = new ObjectStore({ maxBytes: 1024 * 1024, ttlMs: 60_000, spill })
    store.put(id(1), bytes(256 * 1024, 1), { visible: true })
    store.put(id(2), bytes(2 * 1024 * 1024, 2), { visible: true })
    for (let i = 0; i < 2; i++) {
      const value = store.value(id(2)) as { bytes: Uint8Array }
      expect(value.bytes.byteLength).toBe(2 * 1024 * 1024)
      expect(value.bytes[12345]).toBe(2)
    }
    expect(store.stats().bytes).toBe(256 * 1024) // the small one never had to leave
    expect(store.stats().restores.count).toBe(2)
    store.close()
  })

  it('counts what it keeps of every object against its memory: many objects leave less room for values', () => {
    const { spill } = spillStore()
    const store = new ObjectStore({ maxBytes: 1024 * 1024, ttlMs: 60_000, spill })
    store.put(id(0), bytes(512 * 1024, 9), { visible: true })
    expect(store.stats().bytes).toBe(512 * 1024)
    for (let i = 1; i <= 2000; i++) store.create(id(i), 'f') // about 750 KiB of records
    store.put(id(5000), bytes(512 * 1024, 7), { visible: true })
    expect(store.stats().bytes).toBe(0) // neither fits beside the records
    expect(store.stats().spilled.count).toBe(2)
    expect((store.value(id(0)) as { bytes: Uint8Array }).bytes[0]).toBe(9)
    store.close()
  })

  it('without a disk tier, a full memory refuses new values rather than dropping old ones', () => {
    const store = new ObjectStore({ maxBytes: 2048, ttlMs: 60_000 })
    store.put(id(1), json('"a"'.padEnd(1500, ' ')), { visible: true })
    expect(() => store.put(id(2), json('"b"'.padEnd(1500, ' ')), { visible: true })).toThrow(
      ObjectStoreFullError,
    )
    expect(store.has(id(1))).toBe(true)
    store.close()
  })
})

describe('ObjectStore lifetimes', () => {
  it('frees an unseen object once nothing pins it, and what its value referred to with it', () => {
    const store = new ObjectStore({ maxBytes: 1 << 20, ttlMs: 60_000 })
    store.create(id(1), 'f')
    store.pin(id(1))
    store.settle(id(1), { value: json('7') })
    store.create(id(2), 'g')
    store.pin(id(2))
    store.settle(id(2), { value: json(`[{"$ref":"${id(1)}"}]`) })
    store.unpin(id(1))
    expect(store.has(id(1))).toBe(true) // the value of id(2) refers to it
    store.unpin(id(2))
    expect(store.has(id(2))).toBe(false)
    expect(store.has(id(1))).toBe(false)
    expect(store.stats().count).toBe(0)
    store.close()
  })

  it('keeps the arguments of a pending task until it settles', () => {
    const store = new ObjectStore({ maxBytes: 1 << 20, ttlMs: 60_000 })
    store.create(id(1), null)
    store.pin(id(1))
    store.settle(id(1), { value: json('1') })
    store.create(id(2), 'f', { visible: true })
    store.holdArguments(id(2), [id(1)])
    store.unpin(id(1))
    expect(store.has(id(1))).toBe(true)
    store.settle(id(2), { value: json('2') })
    expect(store.has(id(1))).toBe(false)
    expect(store.has(id(2))).toBe(true)
    store.close()
  })

  it('keeps what a seen value refers to for the TTL of a client that could have read the ids', () => {
    let now = 1_000_000
    const store = new ObjectStore({ maxBytes: 1 << 20, ttlMs: 1000, now: () => now })
    store.create(id(1), null)
    store.pin(id(1))
    store.settle(id(1), { value: json('1') })
    store.put(id(2), json(`{"inner":{"$ref":"${id(1)}"}}`), { visible: true })
    store.unpin(id(1))
    now += 500
    store.seen(id(2))
    now += 800
    store.expire()
    expect(store.has(id(2))).toBe(true)
    store.delete(id(2))
    expect(store.has(id(1))).toBe(true) // seen with id(2): a client may hold its id
    now += 1000
    store.expire()
    expect(store.has(id(1))).toBe(false)
    store.close()
  })

  it('frees an object that outlived its TTL while pinned, was read again, and let go', () => {
    let now = 1_000_000
    const store = new ObjectStore({ maxBytes: 1 << 20, ttlMs: 1000, now: () => now })
    store.put(id(1), json('1'), { visible: true })
    store.pin(id(1))
    now += 1500
    store.expire() // due, but pinned
    expect(store.stats().count).toBe(1)
    store.seen(id(1))
    store.unpin(id(1)) // read 0 ms ago: it stays
    expect(store.stats().count).toBe(1)
    now += 1500
    store.expire()
    expect(store.stats().count).toBe(0)
    store.close()
  })

  it('drops unpinned copies of remote objects instead of spilling them', () => {
    const { spill } = spillStore()
    const store = new ObjectStore({ maxBytes: 1024 * 1024 + 4096, ttlMs: 60_000, spill })
    store.create(id(1), null, { cached: true, visible: true })
    store.settle(id(1), { value: bytes(1024 * 1024, 1) })
    store.put(id(2), bytes(1024 * 1024, 2), { visible: true })
    expect(store.has(id(1))).toBe(false)
    expect(store.stats().spills.count).toBe(0)
    store.close()
  })

  it('finds the ids of $ref and $actor markers in JSON text', () => {
    expect(heldIdsInJson('[1,2]')).toEqual([])
    expect(heldIdsInJson(`{"a":{"$ref": "${id(1)}"},"b":[{"$ref":"${id(2)}"},{"$ref":"${id(1)}"}]}`)).toEqual(
      [id(1), id(2)],
    )
    expect(heldIdsInJson(`[{"$actor":"${id(3)}"},{"$ref":"${id(1)}"}]`)).toEqual([id(3), id(1)])
  })

  it('says which objects it frees', () => {
    const freed: string[] = []
    const store = new ObjectStore({ maxBytes: 1024, ttlMs: 1000, freed: (i) => freed.push(i) })
    store.create(id(1), null)
    store.pin(id(1))
    store.settle(id(1), { value: { kind: 'json', text: '1' } })
    expect(freed).toEqual([])
    store.unpin(id(1))
    expect(freed).toEqual([id(1)])
    store.close()
  })
})

describe('SpillStore', () => {
  it('compacts a segment that is mostly freed space, and keeps what is left of it readable', () => {
    const { spill, dir } = spillStore()
    const value = (n: number) => ({
      kind: 'json' as const,
      text: JSON.stringify({ n, pad: 'p'.repeat(1000) }),
    })
    // About 4 segments of small values.
    for (let i = 0; i < 16_000; i++) spill.write(id(i), value(i))
    const files = readdirSync(dir).length
    expect(files).toBeGreaterThanOrEqual(4)
    const before = spill.stats().fileBytes
    // Free three of every four values: sealed segments fall under half full and are compacted.
    for (let i = 0; i < 16_000; i++) if (i % 4 !== 0) spill.remove(id(i))
    expect(spill.stats().fileBytes).toBeLessThan(before / 2)
    for (let i = 0; i < 16_000; i += 4) {
      expect(JSON.parse((spill.read(id(i)) as { text: string }).text).n).toBe(i)
    }
    expect(spill.stats().count).toBe(4000)
    spill.close()
  })
})
