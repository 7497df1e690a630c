import { describe, expect, it } from 'vitest'
import { RingDeque } from '../../node/scheduler/deque.ts'

describe('RingDeque', () => {
  it('pops from the front what was pushed to the front last (a stack for nested work)', () => {
    const d = new RingDeque<number>(2)
    d.pushFront(1)
    d.pushFront(2)
    d.pushFront(3)
    expect([d.popFront(), d.popFront(), d.popFront(), d.popFront()]).toEqual([3, 2, 1, undefined])
  })

  it('pops from the back the oldest front push (what a thief takes)', () => {
    const d = new RingDeque<number>()
    for (const n of [1, 2, 3]) d.pushFront(n)
    expect(d.peekBack()).toBe(1)
    expect(d.popBack()).toBe(1)
    expect(d.length).toBe(2)
  })

  it('grows past its capacity and keeps order across the wrap', () => {
    const d = new RingDeque<number>(4)
    for (let i = 0; i < 3; i++) d.pushBack(i)
    d.popFront()
    d.popFront()
    for (let i = 3; i < 40; i++) d.pushBack(i)
    d.pushFront(-1)
    const out: number[] = []
    for (let x = d.popFront(); x !== undefined; x = d.popFront()) out.push(x)
    expect(out).toEqual([-1, 2, ...Array.from({ length: 37 }, (_, i) => i + 3)])
  })

  it('removes matching items and keeps the rest in order', () => {
    const d = new RingDeque<number>()
    for (let i = 0; i < 6; i++) d.pushBack(i)
    expect(d.removeWhere((x) => x % 2 === 0)).toEqual([0, 2, 4])
    expect([d.popFront(), d.popFront(), d.popFront()]).toEqual([1, 3, 5])
  })
})
