/** Cancel: queued calls never run, running ones settle as cancelled at once, trees go with their root. */
import { describe, expect, it } from 'vitest'
import { TaskCancelledError } from '../sdk/index.ts'
import { useClient, usePlatform } from './helpers.ts'

const ctx = usePlatform({ cpus: 1 })
const mp = useClient(ctx)

const cancel = (id: string, body = '{}') =>
  fetch(`${ctx.url}/v1/objects/${id}/cancel`, { method: 'POST', body })

describe('cancel', () => {
  it('settles a queued call as 409 TASK_CANCELLED; it never runs', async () => {
    // Every worker busy, and one more call each handed to it ahead: the next one waits.
    const blockers = [1, 2, 3, 4].map(() => mp.remote('busy').remote(800))
    const queued = mp.remote('square').remote(4)
    await mp.wait([...blockers, queued], { numReturns: 0 })
    const response = await cancel(queued.id)
    expect(response.status).toBe(202)
    expect(((await response.json()) as { status: string }).status).toBe('cancelled')
    const read = await fetch(`${ctx.url}/v1/objects/${queued.id}`)
    expect(read.status).toBe(409)
    expect(((await read.json()) as { error: { code: string } }).error.code).toBe('TASK_CANCELLED')
    await expect(mp.get(queued, { timeout: 10 })).rejects.toBeInstanceOf(TaskCancelledError)
    expect(await mp.get(blockers, { timeout: 10 })).toEqual([800, 800, 800, 800])
  })

  it('settles a running call at once, and with force frees its thread at once', async () => {
    const stuck = mp.remote('busy').remote(20_000)
    await new Promise((r) => setTimeout(r, 300))
    const started = Date.now()
    await mp.cancel(stuck, { force: true })
    await expect(mp.get(stuck, { timeout: 5 })).rejects.toBeInstanceOf(TaskCancelledError)
    expect(await mp.get(mp.remote('square').remote(5), { timeout: 10 })).toBe(25)
    expect(Date.now() - started).toBeLessThan(5000)
  })

  it('aborts the signal of an async call', async () => {
    const waiting = mp.remote('wait-abort').remote(20_000)
    await new Promise((r) => setTimeout(r, 300))
    await mp.cancel(waiting)
    await expect(mp.get(waiting, { timeout: 5 })).rejects.toBeInstanceOf(TaskCancelledError)
    // The function heeded its signal and let go of its thread: the next call runs at once.
    expect(await mp.get(mp.remote('wait-abort').remote(10), { timeout: 5 })).toBe('waited')
  })

  it('cancels the calls a call made', async () => {
    const tree = mp.remote('fan-out').remote(50, 'busy', 100)
    await new Promise((r) => setTimeout(r, 400))
    await mp.cancel(tree)
    await expect(mp.get(tree, { timeout: 5 })).rejects.toBeInstanceOf(TaskCancelledError)
    // 50 × 100 ms of work, cancelled: the thread is free again well before it would have been.
    const started = Date.now()
    expect(await mp.get(mp.remote('square').remote(6), { timeout: 10 })).toBe(36)
    expect(Date.now() - started).toBeLessThan(2500)
  })

  it('cancels from inside a function, with cancel from magpie', async () => {
    expect(await mp.get(mp.remote('cancel-child').remote(), { timeout: 10 })).toBe('cancelled')
  })

  it('leaves a finished call as it is, and rejects bad options', async () => {
    const done = mp.remote('square').remote(7)
    expect(await mp.get(done, { timeout: 10 })).toBe(49)
    expect((await cancel(done.id)).status).toBe(202)
    expect(await mp.get(done, { timeout: 10 })).toBe(49)
    expect((await cancel(done.id, '{"force": "yes"}')).status).toBe(400)
    expect((await cancel('nosuchobject0000000')).status).toBe(404)
  })

  it('cancels a pending call that is deleted', async () => {
    const blockers = [1, 2, 3, 4].map(() => mp.remote('busy').remote(500))
    const queued = mp.remote('square').remote(3)
    await mp.wait([...blockers, queued], { numReturns: 0 })
    await mp.free(queued)
    expect((await fetch(`${ctx.url}/v1/objects/${queued.id}`)).status).toBe(404)
    expect(await mp.get(blockers, { timeout: 10 })).toEqual([500, 500, 500, 500])
  })
})
