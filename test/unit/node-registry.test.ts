import { describe, expect, it } from 'vitest'
import { type ClusterNode, EMPTY_STATS, NodeRegistry } from '../../cluster/head/registry.ts'

function setUp(deadAfterMs = 1000) {
  let now = 0
  let next = 0
  const dead: ClusterNode[] = []
  const registry = new NodeRegistry({
    deadAfterMs,
    now: () => now,
    newId: () => `nid${String(++next).padStart(4, '0')}`,
    onDead: (node) => dead.push(node),
    sweep: false,
  })
  return {
    registry,
    dead,
    advance(ms: number) {
      now += ms
      registry.sweep()
    },
  }
}

const stats = (queued: number) => ({ ...EMPTY_STATS, cpus: 1, queued })

describe('NodeRegistry', () => {
  it('gives a node the id it asks for, else one of its own', () => {
    const { registry } = setUp()
    expect(registry.register('http://a:1', 1, {}, 'nAbc123').id).toBe('nAbc123')
    expect(registry.register('http://b:1', 1, {}, 'not an id').id).toBe('nid0001')
    expect(registry.register('http://c:1', 1, {}).id).toBe('nid0002')
  })

  it('does not hand a live node id to another address', () => {
    const { registry } = setUp()
    registry.register('http://a:1', 1, {}, 'nAbc123')
    expect(registry.register('http://b:1', 1, {}, 'nAbc123').id).toBe('nid0001')
    // The same node registering again (its first answer lost) keeps its id.
    expect(registry.register('http://a:1', 1, {}, 'nAbc123').id).toBe('nAbc123')
  })

  it('takes a node silent past deadAfterMs for dead, once, and heartbeats keep it alive', () => {
    const { registry, dead, advance } = setUp(1000)
    const a = registry.register('http://a:1', 1, {}, 'nAaaaaa')
    registry.register('http://b:1', 1, {}, 'nBbbbbb')
    advance(600)
    expect(registry.heartbeat('nBbbbbb', stats(3))).toBe(true)
    advance(600)
    expect(dead.map((n) => n.id)).toEqual(['nAaaaaa'])
    expect(a.state).toBe('dead')
    expect(registry.alive().map((n) => n.id)).toEqual(['nBbbbbb'])
    expect(registry.get('nBbbbbb')?.stats.queued).toBe(3)
    advance(5000)
    expect(dead.map((n) => n.id)).toEqual(['nAaaaaa', 'nBbbbbb'])
  })

  it('refuses the heartbeat of a dead node, which then registers again under its id', () => {
    const { registry, advance } = setUp(1000)
    registry.register('http://a:1', 1, {}, 'nAaaaaa')
    advance(2000)
    expect(registry.heartbeat('nAaaaaa', stats(0))).toBe(false)
    expect(registry.heartbeat('nUnknwn', stats(0))).toBe(false)
    const again = registry.register('http://a:1', 1, {}, 'nAaaaaa')
    expect(again.id).toBe('nAaaaaa')
    expect(again.state).toBe('alive')
  })

  it('resets the calls placed since the last heartbeat when one comes', () => {
    const { registry } = setUp()
    const a = registry.register('http://a:1', 1, {}, 'nAaaaaa')
    a.placedSinceBeat = 4
    registry.heartbeat('nAaaaaa', stats(4))
    expect(a.placedSinceBeat).toBe(0)
  })
})
