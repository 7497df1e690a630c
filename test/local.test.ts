/**
 * Local mode: the client's API in this process (no threads, no HTTP), on the
 * repository's function folders and the test fixtures.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { connect, FunctionNotFoundError, GetTimeoutError, get, remote, TaskError } from '../sdk/index.ts'
import { local } from '../sdk/testing.ts'
import type Counter from './fixtures/functions/counter/index.ts'
import { ROOT } from './helpers.ts'

const mp = local(`${ROOT}/functions`)
const fixtures = local(`${ROOT}/test/fixtures/functions`)
afterEach(() => {
  mp.reset()
  fixtures.reset()
})

describe('local mode', () => {
  it('runs calls, nested calls, get, wait and put in this process', async () => {
    expect(await mp.call('square', 12)).toBe(144)
    expect(await mp.get(mp.remote('fib').remote(12))).toBe(144)
    const refs = [1, 2, 3].map((x) => mp.remote('square').remote(x))
    const { ready, pending } = await mp.wait(refs, { numReturns: 3 })
    expect(ready).toEqual(refs)
    expect(pending).toEqual([])
    const big = await mp.put({ numbers: [1, 2, 3] })
    expect(await mp.get(mp.remote('echo').remote(big))).toEqual({ numbers: [1, 2, 3] })
    const bytes = await mp.get(mp.remote('echo').remote(new Uint8Array([1, 2, 3])))
    expect(bytes).toEqual(new Uint8Array([1, 2, 3]))
    expect(await mp.meta(refs[0] as never)).toMatchObject({
      status: 'ready',
      node: 'local',
      function: 'square',
    })
  })

  it('runs calls one at a time, in the order they were submitted; a call waiting in get lets the next run', async () => {
    const order: string[] = []
    const mpx = local({
      step: {
        default: (tag: string) => {
          order.push(tag)
          return tag
        },
      },
      parent: {
        default: async (n: number) => {
          order.push('parent starts')
          const refs = Array.from({ length: n }, (_, i) => remote('step').remote(`child${i}`))
          order.push('parent submitted')
          const got = await get(refs)
          order.push('parent ends')
          return got
        },
      },
    })
    const parent = mpx.remote('parent').remote(2)
    const x = mpx.remote('step').remote('x')
    expect(await mpx.get([parent, x])).toEqual([['child0', 'child1'], 'x'])
    expect(order).toEqual(['parent starts', 'parent submitted', 'x', 'child0', 'child1', 'parent ends'])
  })

  it('keeps submission order while a function is still being imported', async () => {
    const order: string[] = []
    const mpx = local({
      fast: { default: (tag: string) => order.push(tag) },
      slow: async () => {
        await new Promise((resolve) => setTimeout(resolve, 50))
        return { default: (tag: string) => order.push(tag) }
      },
    })
    await mpx.call('fast', 'warm-up')
    const refs = [mpx.remote('slow').remote('first'), mpx.remote('fast').remote('second')]
    await mpx.get(refs)
    expect(order).toEqual(['warm-up', 'first', 'second'])
  })

  it("fails with the function's error, whose stack points into its source", async () => {
    const err = await mp.call('fail', 'boom').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TaskError)
    expect((err as TaskError).remote).toMatchObject({ name: 'CustomError', message: 'boom' })
    expect((err as TaskError).remote.stack).toContain('functions/fail/index.ts:7')
    await expect(mp.call('no-such-function')).rejects.toBeInstanceOf(FunctionNotFoundError)
    await expect(mp.get(mp.remote('sleep').remote(5_000), { timeout: 0.05 })).rejects.toBeInstanceOf(
      GetTimeoutError,
    )
  })

  it('runs actors: ordered calls, state, names, handles passed to tasks, kill', async () => {
    const c = fixtures.actor<typeof Counter>('counter').options({ name: 'c1' }).remote(10)
    const increments = [1, 2, 3].map((by) => c.increment.remote(by))
    expect(await fixtures.get(increments)).toEqual([11, 13, 16])
    const found = await fixtures.getActor('c1')
    expect(await fixtures.get((found as typeof c).value.remote())).toBe(16)
    expect(await fixtures.call('bump', c)).toBe(17)
    await expect(
      fixtures.get((c as unknown as { _hidden: { remote(): never } })._hidden.remote()),
    ).rejects.toThrow(/no method _hidden/)
    await fixtures.kill(c)
    await expect(fixtures.get(c.value.remote())).rejects.toThrow(/dead|killed/)
    await expect(fixtures.getActor('c1')).rejects.toThrow(/no live actor/)
  })

  it("keeps a call's console lines as its logs", async () => {
    const ref = fixtures.remote('chatty').remote(2, 'hello')
    await fixtures.get(ref)
    const lines: string[] = []
    for await (const line of fixtures.logs(ref)) lines.push(line)
    expect(lines.length).toBeGreaterThan(0)
  })

  it('is what connect() gives with MAGPIE_LOCAL=1', async () => {
    process.env.MAGPIE_LOCAL = '1'
    process.env.MAGPIE_FUNCTIONS = `${ROOT}/functions`
    try {
      const viaEnv = connect()
      expect(viaEnv.url).toBe('local:')
      expect(await viaEnv.get(viaEnv.remote('square').remote(9))).toBe(81)
      const direct = connect('local:', { functions: { twice: { default: (x: number) => 2 * x } } })
      expect(await direct.get(direct.remote('twice').remote(21))).toBe(42)
    } finally {
      delete process.env.MAGPIE_LOCAL
      delete process.env.MAGPIE_FUNCTIONS
    }
  })
})
