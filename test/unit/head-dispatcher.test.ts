import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { InternalClient, OutgoingCall } from '../../cluster/client.ts'
import { Directory } from '../../cluster/head/directory.ts'
import { Dispatcher } from '../../cluster/head/dispatcher.ts'
import { NodeRegistry } from '../../cluster/head/registry.ts'

const cleanups: Array<() => void> = []
afterEach(() => {
  for (const clean of cleanups.splice(0)) clean()
})

/** A dispatcher over two registered nodes, with a client that records what it is sent. */
function setUp(maxRetries = 2) {
  const dir = mkdtempSync(join(tmpdir(), 'magpie-dispatcher-'))
  const directory = new Directory({ ttlMs: 60_000, spillDir: dir })
  const registry = new NodeRegistry({
    now: () => 0,
    sweep: false,
    onDead: (node) => dispatcher.nodeDied(node),
  })
  cleanups.push(() => {
    directory.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const sent: Array<{ node: string; call: OutgoingCall }> = []
  const client = {
    async sendCalls(address: string, calls: OutgoingCall[]) {
      for (const call of calls) sent.push({ node: address, call })
      return calls.map((c) => c.id)
    },
  } as unknown as InternalClient
  const dispatcher = new Dispatcher({ registry, directory, client })
  registry.register('http://10.0.0.1:7000', 1, {}, 'nAaaaaa')
  registry.register('http://10.0.0.2:7000', 1, {}, 'nBbbbbb')
  const id = 'callcallcallcall'
  directory.create(id, 'square')
  dispatcher.submit({ id, fn: 'square', args: [{ kind: 'json', text: '3' }], options: { maxRetries } })
  const flushed = () => new Promise((r) => setImmediate(r))
  return { directory, registry, dispatcher, sent, id, flushed }
}

describe('the head dispatcher', () => {
  it('places a call and sends it, naming its placement', async () => {
    const { sent, flushed, directory, id } = setUp()
    await flushed()
    expect(sent).toHaveLength(1)
    expect(sent[0]?.call).toMatchObject({ id, fn: 'square', epoch: 1 })
    expect(directory.lookup(id)?.node).toMatch(/^n(Aaaaaa|Bbbbbb)$/)
  })

  it('runs a call again when its result was lost, but not for a stale report', async () => {
    const { sent, flushed, dispatcher, id } = setUp()
    await flushed()
    dispatcher.lost(id, 1, 'lost on the way')
    await flushed()
    expect(sent.map((s) => s.call.epoch)).toEqual([1, 2])
    dispatcher.lost(id, 1, 'a report from the first placement, late')
    await flushed()
    expect(sent).toHaveLength(2)
  })

  it('places again the calls of a node that died, until their retries run out', async () => {
    const { sent, flushed, registry, directory, id } = setUp(1)
    await flushed()
    const first = directory.lookup(id)?.node as string
    registry.markDead(first)
    await flushed()
    expect(sent).toHaveLength(2)
    const second = directory.lookup(id)?.node as string
    expect(second).not.toBe(first)
    registry.markDead(second)
    expect(directory.lookup(id)).toMatchObject({
      status: 'failed',
      error: { code: 'WORKER_CRASHED', attempts: 2 },
    })
  })

  it('settles nothing twice: a call that finished is not placed again', async () => {
    const { sent, flushed, dispatcher, registry, directory, id } = setUp()
    await flushed()
    expect(dispatcher.finished(id)).toBe(1)
    directory.settle(id, { value: { kind: 'json', text: '9' } })
    registry.markDead(directory.lookup(id)?.node as string)
    await flushed()
    expect(sent).toHaveLength(1)
    expect(directory.value(id)).toEqual({ kind: 'json', text: '9' })
  })
})
