/** Backpressure: past its bounds a platform answers 429 QUEUE_FULL with Retry-After; the SDK waits and tries again. */
import { describe, expect, it } from 'vitest'
import { useClient, usePlatform } from './helpers.ts'

const ctx = usePlatform({ cpus: 1, admission: { maxQueued: 4, maxQueuedBytes: 4096 } })
const mp = useClient(ctx)

function invoke(fn: string, body: string, headers: Record<string, string> = {}) {
  return fetch(`${ctx.url}/v1/functions/${fn}/invoke`, { method: 'POST', body, headers })
}

/** Fills the queue with four calls of `ms`, once what earlier tests left has drained. */
async function fill(ms: number): Promise<string[]> {
  const ids: string[] = []
  const deadline = Date.now() + 20_000
  while (ids.length < 4) {
    const response = await invoke('busy', JSON.stringify([ms]))
    if (response.status === 429 && Date.now() < deadline) {
      await response.body?.cancel()
      await new Promise((r) => setTimeout(r, 50))
      continue
    }
    expect(response.status).toBe(202)
    ids.push(((await response.json()) as { id: string }).id)
  }
  return ids
}

describe('backpressure', () => {
  it('answers 429 QUEUE_FULL with Retry-After past the bound, and takes calls again once some finish', async () => {
    const ids = await fill(300)
    const refused = await invoke('square', '[3]')
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toBe('1')
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('QUEUE_FULL')
    const batch = await fetch(`${ctx.url}/v1/calls`, {
      method: 'POST',
      body: JSON.stringify([{ function: 'square', args: [1] }]),
    })
    expect(batch.status).toBe(429)
    // A call sent again is answered as the first was, full or not.
    const again = await invoke('busy', '[300]', { 'x-magpie-object-id': ids[0] as string })
    expect(again.status).toBe(202)
    await fetch(`${ctx.url}/v1/objects/${ids[3]}?wait=30`)
    expect((await invoke('square', '[3]')).status).toBe(202)
  })

  it('lets the SDK wait and try again by itself', async () => {
    await fill(200)
    expect(await mp.get(mp.remote('square').remote(9), { timeout: 30 })).toBe(81)
    expect(
      await mp.get(
        [1, 2, 3].map((x) => mp.remote('square').remote(x)),
        { timeout: 30 },
      ),
    ).toEqual([1, 4, 9])
  })

  it('never refuses calls made inside functions', async () => {
    expect(await mp.get(mp.remote('fan-out').remote(40), { timeout: 30 })).toMatchObject({ calls: 40 })
  })

  it('bounds the bytes of arguments that wait, but takes any call when none wait', async () => {
    const big = JSON.stringify(['x'.repeat(5000)])
    const first = await invoke('echo', big)
    expect([200, 202]).toContain(first.status)
    await fetch(`${ctx.url}/v1/objects/${((await first.json()) as { id: string }).id}?wait=10`)
    await fill(300)
    const over = await invoke('echo', big)
    expect(over.status).toBe(429)
    expect(((await over.json()) as { error: { message: string } }).error.message).toMatch(/calls|bytes/)
  })
})
