/**
 * Stealing between nodes at rest and when work appears: an idle node asks
 * its peers less and less often, comes at once when nudged, and a node with
 * calls it cannot start nudges only the peers the head last saw idle.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { InternalClient } from '../../cluster/client.ts'
import { STEAL_PER_CPU, stealShare, Thief } from '../../cluster/node/thief.ts'
import type { Nudge, Peer, StolenCall } from '../../cluster/protocol.ts'
import type { LocalNode } from '../../node/node.ts'

function fakeNode(load = { running: 0, queued: 0 }) {
  return { cpus: 1, load, store: { largest: () => [] } } as unknown as LocalNode & {
    load: { running: number; queued: number }
  }
}

function fakeClient() {
  const steals: string[] = []
  const nudges: Array<{ at: string; body: Nudge }> = []
  let answer: StolenCall[] = []
  const client = {
    steal: async (at: string) => {
      steals.push(at)
      const calls = answer
      answer = []
      return calls
    },
    nudge: async (at: string, body: Nudge) => {
      nudges.push({ at, body })
    },
  } as unknown as InternalClient
  return { client, steals, nudges, give: (calls: StolenCall[]) => (answer = calls) }
}

const peer = (id: string, over: Partial<Peer> = {}): Peer => ({
  id,
  address: `http://${id}`,
  queued: 0,
  running: 0,
  cpus: 1,
  ...over,
})

const thieves: Thief[] = []
afterEach(() => {
  for (const t of thieves.splice(0)) t.stop()
  vi.useRealTimers()
})

function thief(node: LocalNode, client: InternalClient, run: (calls: StolenCall[]) => void = () => {}) {
  const t = new Thief({ node, client, run, resources: {}, self: () => ({ id: 'me', address: 'http://me' }) })
  thieves.push(t)
  return t
}

describe('an idle node', () => {
  it('asks its peers less and less often while they have nothing', async () => {
    vi.useFakeTimers()
    const { client, steals } = fakeClient()
    const t = thief(fakeNode(), client)
    t.setPeers([peer('a'), peer('b')])
    await vi.advanceTimersByTimeAsync(10_000)
    // Every 20 ms, as before, would be 500 asks; doubling from 50 ms up to 1 s is about 15.
    expect(steals.length).toBeGreaterThan(5)
    expect(steals.length).toBeLessThan(25)
    const before = steals.length
    await vi.advanceTimersByTimeAsync(10_000)
    expect(steals.length - before).toBeLessThanOrEqual(11)
  })

  it('comes at once when a peer nudges it, and takes what it has', async () => {
    vi.useFakeTimers()
    const { client, steals, give } = fakeClient()
    const ran: StolenCall[][] = []
    const node = fakeNode()
    const t = thief(node, client, (calls) => {
      ran.push(calls)
      node.load.running = 1
    })
    t.setPeers([peer('a'), peer('b')])
    await vi.advanceTimersByTimeAsync(30_000)
    const before = steals.length
    give([{ id: 'x'.repeat(21) } as StolenCall])
    t.nudged({ id: 'b', queued: 3 })
    await vi.advanceTimersByTimeAsync(1)
    expect(steals.slice(before)).toEqual(['http://b'])
    expect(ran).toHaveLength(1)
  })
})

describe('a node whose threads are busy', () => {
  it('looks for work as soon as a call ends, not at its next tick', async () => {
    vi.useFakeTimers()
    const { client, steals } = fakeClient()
    const node = fakeNode({ running: 1, queued: 0 })
    const t = thief(node, client)
    t.setPeers([peer('a', { queued: 5, running: 1 })])
    await vi.advanceTimersByTimeAsync(1000)
    // Busy: it does not ask, and looks seldom.
    expect(steals).toEqual([])
    node.load.running = 0
    t.freed()
    await vi.advanceTimersByTimeAsync(1)
    expect(steals).toEqual(['http://a'])
  })
})

describe('a node with calls waiting', () => {
  it('nudges the peers last seen idle, at most every 100 ms', async () => {
    vi.useFakeTimers()
    const { client, nudges } = fakeClient()
    const node = fakeNode({ running: 1, queued: 0 })
    const t = thief(node, client)
    t.setPeers([peer('idle'), peer('busy', { running: 1 }), peer('queued', { queued: 2 })])
    // Nothing waits: nobody is told.
    t.queuedHere()
    expect(nudges).toHaveLength(0)
    node.load.queued = 4
    t.queuedHere()
    t.queuedHere()
    expect(nudges).toEqual([{ at: 'http://idle', body: { id: 'me', queued: 4 } }])
    await vi.advanceTimersByTimeAsync(150)
    t.queuedHere()
    expect(nudges).toHaveLength(2)
  })
})

describe('the share a thief takes', () => {
  it('is half of the queue, rounded up, and at most STEAL_PER_CPU for each of its CPUs', () => {
    expect(stealShare(1, 4)).toBe(1)
    expect(stealShare(7, 4)).toBe(4)
    expect(stealShare(100_000, 1)).toBe(STEAL_PER_CPU)
    expect(stealShare(100_000, 4)).toBe(4 * STEAL_PER_CPU)
  })
})
