import { describe, expect, it } from 'vitest'
import { capable, load, place } from '../../cluster/head/placement.ts'
import { NodeRegistry } from '../../cluster/head/registry.ts'
import { canRun } from '../../cluster/protocol.ts'

/** Nodes registered with a registry on a fake clock, loaded as given. */
function nodes(loads: Array<{ cpus: number; queued?: number; resources?: Record<string, number> }>) {
  const registry = new NodeRegistry({ now: () => 0, sweep: false })
  return loads.map((l, i) => {
    const node = registry.register(`http://10.0.0.${i + 1}:7000`, l.cpus, l.resources ?? {})
    node.stats = { ...node.stats, queued: l.queued ?? 0 }
    return node
  })
}

/** A random source that returns the given numbers in turn. */
const sequence = (...values: number[]) => {
  let i = 0
  return () => values[i++ % values.length] as number
}

describe('canRun', () => {
  it('needs the CPUs and every resource a call asks for', () => {
    expect(canRun({}, 1, {})).toBe(true)
    expect(canRun({ numCpus: 2 }, 1, {})).toBe(false)
    expect(canRun({ resources: { gpu: 1 } }, 4, { gpu: 1 })).toBe(true)
    expect(canRun({ resources: { gpu: 2 } }, 4, { gpu: 1 })).toBe(false)
    expect(canRun({ resources: { tpu: 1 } }, 4, { gpu: 1 })).toBe(false)
  })
})

describe('place', () => {
  it('places on the node holding the most bytes of the arguments', () => {
    const [a, b, c] = nodes([{ cpus: 1, queued: 0 }, { cpus: 1, queued: 50 }, { cpus: 1 }])
    const held = new Map([
      [b, 3000],
      [c, 100],
    ])
    expect(place([a, b, c] as never, (n) => held.get(n as never) ?? 0, sequence(0))).toBe(b)
  })

  it('else picks the less loaded of two drawn at random', () => {
    const [a, b, c] = nodes([
      { cpus: 1, queued: 8 },
      { cpus: 1, queued: 2 },
      { cpus: 2, queued: 2 },
    ])
    const list = [a, b, c] as never[]
    // Draws a (0.0) and b (0.5 of the two others): b is less loaded.
    expect(place(list, () => 0, sequence(0, 0.5))).toBe(b)
    // Draws b and c: c has as much queued on twice the CPUs.
    expect(place(list, () => 0, sequence(0.4, 0.9))).toBe(c)
    expect(load(c as never)).toBe(1)
  })

  it('counts calls placed since the last heartbeat', () => {
    const [a, b] = nodes([{ cpus: 1 }, { cpus: 1 }])
    ;(a as { placedSinceBeat: number }).placedSinceBeat = 5
    expect(place([a, b] as never[], () => 0, sequence(0, 0))).toBe(b)
  })

  it('places nowhere without nodes, and on the only one there is', () => {
    const [a] = nodes([{ cpus: 1 }])
    expect(place([], () => 0)).toBeUndefined()
    expect(place([a] as never[], () => 0)).toBe(a)
  })

  it('keeps only the nodes that could ever run the call', () => {
    const list = nodes([{ cpus: 1 }, { cpus: 4 }, { cpus: 1, resources: { gpu: 1 } }])
    expect(capable(list, { numCpus: 2 }).map((n) => n.cpus)).toEqual([4])
    expect(capable(list, { resources: { gpu: 1 } })).toHaveLength(1)
  })
})
