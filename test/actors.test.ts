/** Actors: made from a class, called in order, found by name, and killed. */
import { describe, expect, it } from 'vitest'
import { ActorDiedError, TaskError } from '../sdk/index.ts'
import { useClient, usePlatform } from './helpers.ts'

const ctx = usePlatform({ cpus: 2 })
const mp = useClient(ctx)

class Counter {
  n: number
  constructor(start = 0) {
    this.n = start
  }
  increment(_by?: number): number {
    return 0
  }
  crash(): number {
    return 0
  }
  value(): number {
    return 0
  }
  spin(_ms: number): number {
    return 0
  }
}

class Sleeper {
  async nap(_ms: number): Promise<{ start: number; end: number }> {
    return { start: 0, end: 0 }
  }
}

const post = (path: string, body: unknown) =>
  fetch(`${ctx.url}${path}`, { method: 'POST', body: JSON.stringify(body) })

describe('actors', () => {
  it('runs 1,000 increments from one client in the order they were made', async () => {
    const c = mp.actor<typeof Counter>('counter').remote()
    const refs = Array.from({ length: 1000 }, () => c.increment.remote())
    expect(await mp.get(refs, { timeout: 60 })).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1))
  }, 90_000)

  it('makes one actor of ten concurrent getIfExists creates of one name', async () => {
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        post('/v1/actors', {
          class: 'counter',
          args: [5],
          name: 'shared-one',
          options: { getIfExists: true },
        }),
      ),
    )
    const ids = await Promise.all(answers.map(async (a) => ((await a.json()) as { id: string }).id))
    expect(new Set(ids).size).toBe(1)
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1)
    const taken = await post('/v1/actors', { class: 'counter', name: 'shared-one' })
    expect(taken.status).toBe(409)
    await fetch(`${ctx.url}/v1/objects/${ids[0]}?wait=10`)
    const info = (await (await fetch(`${ctx.url}/v1/actors/shared-one`)).json()) as Record<string, unknown>
    expect(info).toMatchObject({ id: ids[0], class: 'counter', name: 'shared-one', state: 'alive' })
    const handle = await mp.getActor<Counter>('shared-one')
    expect(await mp.get(handle.increment.remote(2))).toBe(7)
  })

  it('overlaps four naps of an async actor with maxConcurrency 4', async () => {
    const s = mp.actor<typeof Sleeper>('sleeper').remote()
    const naps = await mp.get(
      [1, 2, 3, 4].map(() => s.nap.remote(400)),
      { timeout: 30 },
    )
    const latestStart = Math.max(...naps.map((n) => n.start))
    const earliestEnd = Math.min(...naps.map((n) => n.end))
    expect(latestStart).toBeLessThan(earliestEnd)
  })

  it('answers the invoke route’s way, and says no clearly to bad input', async () => {
    const made = await post('/v1/actors', { class: 'counter', args: [1] })
    expect(made.status).toBe(201)
    const { id } = (await made.json()) as { id: string }
    const call = await post(`/v1/actors/${id}/increment?wait=10`, { args: [2] })
    expect(await call.json()).toBe(3)
    for (const method of ['nope', 'constructor', '_hidden', '%23private']) {
      const res = await post(`/v1/actors/${id}/${method}`, [])
      expect(res.status).toBe(404)
      expect(await res.text()).toMatch(/no method/)
    }
    expect((await post('/v1/actors/no-such-actor-000000/increment', [])).status).toBe(404)
    expect((await post('/v1/actors', { class: 'square' })).status).toBe(400)
    expect((await post('/v1/actors', { class: 'no-such-class' })).status).toBe(404)
    expect((await post('/v1/actors', { class: 'counter', options: { maxConcurrency: 0 } })).status).toBe(400)
    const listed = (await (await fetch(`${ctx.url}/v1/actors`)).json()) as Array<{ id: string }>
    expect(listed.map((a) => a.id)).toContain(id)
  })

  it('fails the create call of a class whose constructor throws, and the actor is dead', async () => {
    const made = await post('/v1/actors', { class: 'broken' })
    const { id } = (await made.json()) as { id: string }
    const read = await fetch(`${ctx.url}/v1/objects/${id}?wait=10`)
    expect(read.status).toBe(502)
    expect(((await read.json()) as { error: { code: string } }).error.code).toBe('FUNCTION_ERROR')
    const info = (await (await fetch(`${ctx.url}/v1/actors/${id}`)).json()) as { state: string }
    expect(info.state).toBe('dead')
  })

  it('kills an actor: its calls fail with ACTOR_DIED, and its name is free again', async () => {
    const c = mp.actor<typeof Counter>('counter').options({ name: 'to-kill' }).remote()
    expect(await mp.get(c.increment.remote())).toBe(1)
    await mp.kill(c)
    await expect(mp.get(c.increment.remote(), { timeout: 10 })).rejects.toBeInstanceOf(ActorDiedError)
    const again = mp.actor<typeof Counter>('counter').options({ name: 'to-kill' }).remote(10)
    expect(await mp.get(again.value.remote())).toBe(10)
  })

  it('restarts an actor whose thread died, up to maxRestarts; a call in flight fails with ACTOR_DIED', async () => {
    const c = mp.actor<typeof Counter>('counter').options({ maxRestarts: 1 }).remote(3)
    expect(await mp.get(c.increment.remote())).toBe(4)
    const crash = c.crash.remote()
    await expect(mp.get(crash, { timeout: 20 })).rejects.toBeInstanceOf(ActorDiedError)
    // Made again from its constructor arguments: its state starts over.
    expect(await mp.get(c.increment.remote(), { timeout: 20 })).toBe(4)
    const info = (await (await fetch(`${ctx.url}/v1/actors/${c.id}`)).json()) as {
      restarts: number
      state: string
    }
    expect(info).toMatchObject({ restarts: 1, state: 'alive' })
    const again = c.crash.remote()
    await expect(mp.get(again, { timeout: 20 })).rejects.toBeInstanceOf(ActorDiedError)
    await expect(mp.get(c.increment.remote(), { timeout: 20 })).rejects.toBeInstanceOf(ActorDiedError)
  }, 60_000)

  it('gives a handle passed to 100 tasks, each of which increments it, a count of 100', async () => {
    const c = mp.actor<typeof Counter>('counter').remote()
    const bumps = Array.from({ length: 100 }, () => mp.remote('bump').remote(c))
    const seen = (await mp.get(bumps, { timeout: 60 })) as number[]
    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1))
    expect(await mp.get(c.value.remote())).toBe(100)
  }, 90_000)

  it('makes and finds actors inside functions, with actor and getActor from magpie', async () => {
    expect(await mp.get(mp.remote('count-inside').remote(3, 'made-inside'), { timeout: 30 })).toEqual([
      1, 2, 3, 3,
    ])
  })

  it('keeps the state of an actor whose class checkpoints, across a crash of its thread', async () => {
    const k = mp.actor<typeof Counter>('keeper').remote()
    expect(await mp.get([1, 2, 3].map(() => k.increment.remote()))).toEqual([1, 2, 3])
    await expect(mp.get(k.crash.remote(), { timeout: 20 })).rejects.toBeInstanceOf(ActorDiedError)
    expect(await mp.get(k.increment.remote(), { timeout: 20 })).toBe(4)
  }, 60_000)

  it('checkpoints by time too, with checkpointEvery { calls, seconds }', async () => {
    const k = mp
      .actor<typeof Counter>('keeper')
      .options({ checkpointEvery: { calls: 1000, seconds: 0.05 } })
      .remote()
    expect(await mp.get(k.increment.remote())).toBe(1)
    await new Promise((r) => setTimeout(r, 100))
    // 1,000 calls are far off; 50 ms have passed: this call's end checkpoints.
    expect(await mp.get(k.increment.remote())).toBe(2)
    await expect(mp.get(k.crash.remote(), { timeout: 20 })).rejects.toBeInstanceOf(ActorDiedError)
    expect(await mp.get(k.increment.remote(), { timeout: 20 })).toBe(3)
    expect(
      (await post('/v1/actors', { class: 'keeper', options: { checkpointEvery: { minutes: 1 } } })).status,
    ).toBe(400)
  }, 60_000)

  it('lets an actor go once idle past its ttlS, but not a detached one', async () => {
    const brief = mp.actor<typeof Counter>('counter').options({ ttlS: 1 }).remote()
    const kept = mp.actor<typeof Counter>('counter').options({ ttlS: 1, lifetime: 'detached' }).remote()
    expect(await mp.get([brief.increment.remote(), kept.increment.remote()])).toEqual([1, 1])
    await new Promise((r) => setTimeout(r, 7000))
    await expect(mp.get(brief.increment.remote(), { timeout: 10 })).rejects.toBeInstanceOf(ActorDiedError)
    expect(await mp.get(kept.increment.remote())).toBe(2)
    // A name held by an actor let go is free again.
    const named = mp.actor<typeof Counter>('counter').options({ name: 'short-lived', ttlS: 1 }).remote()
    expect(await mp.get(named.increment.remote())).toBe(1)
    await new Promise((r) => setTimeout(r, 7000))
    const again = mp.actor<typeof Counter>('counter').options({ name: 'short-lived' }).remote(5)
    expect(await mp.get(again.increment.remote())).toBe(6)
  }, 40_000)

  it('ends an actor made inside a function without a name once its maker’s result and every handle are gone', async () => {
    type Info = { id: string; class: string; state: string }
    const actors = async () => (await (await fetch(`${ctx.url}/v1/actors`)).json()) as Info[]
    const state = async (id: string) => (await actors()).find((a) => a.id === id)?.state
    const until = async (id: string, wanted: string) => {
      for (let i = 0; i < 100 && (await state(id)) !== wanted; i++)
        await new Promise((r) => setTimeout(r, 100))
      return state(id)
    }
    const scoped = mp.remote('scoped-actor')
    // No handle left once the function returned: the actor ends.
    const dropped = (await mp.get(scoped.remote('drop'), { timeout: 20 })) as { id: string }
    expect(await until(dropped.id, 'dead')).toBe('dead')
    // A call it passed the handle to holds it while it runs (1.5 s), then lets it go.
    const passed = (await mp.get(scoped.remote('pass'), { timeout: 20 })) as { id: string }
    expect(await state(passed.id)).toBe('alive')
    expect(await until(passed.id, 'dead')).toBe('dead')
    // Its result holds a handle (neither read nor looked at, so no client has it): the actor lives while the result does.
    const before = new Set((await actors()).map((a) => a.id))
    const result = scoped.remote('keep')
    let kept: Info | undefined
    for (let i = 0; i < 100 && kept?.state !== 'alive'; i++) {
      await new Promise((r) => setTimeout(r, 100))
      kept = (await actors()).find((a) => !before.has(a.id))
    }
    await new Promise((r) => setTimeout(r, 1500))
    expect(await state(kept?.id ?? '')).toBe('alive')
    expect((await fetch(`${ctx.url}/v1/objects/${result.id}`, { method: 'DELETE' })).status).toBe(204)
    // On a cluster the value went to the head, where any client could have read it: what it holds lives
    // for its TTL then (docs/contract-notes.md, Actors). On one node, the actor ends with the result.
    const cluster = Number(process.env.MAGPIE_TEST_CLUSTER ?? 0)
    await new Promise((r) => setTimeout(r, 1000))
    if (cluster) expect(await state(kept?.id ?? '')).toBe('alive')
    else expect(await until(kept?.id ?? '', 'dead')).toBe('dead')
  }, 60_000)

  it('answers other actors, and tasks, while one runs a long synchronous method', async () => {
    const busy = mp.actor<typeof Counter>('counter').remote()
    const others = Array.from({ length: 3 }, () => mp.actor<typeof Counter>('counter').remote())
    await mp.get([busy, ...others].map((c) => c.value.remote()))
    const spin = busy.spin.remote(3000)
    await new Promise((r) => setTimeout(r, 300))
    const started = Date.now()
    expect(
      await mp.get(
        others.map((c) => c.increment.remote()),
        { timeout: 10 },
      ),
    ).toEqual([1, 1, 1])
    expect(await mp.get(mp.remote('stamp').remote(), { timeout: 10 })).toBeDefined()
    // Well before the spin ends (2.7 s from then).
    expect(Date.now() - started).toBeLessThan(1500)
    expect(await mp.get(spin, { timeout: 10 })).toBe(0)
  }, 30_000)

  it('fails a method that throws with FUNCTION_ERROR, and the actor lives on', async () => {
    const c = mp.actor<typeof Counter>('counter').remote()
    const failing = (c as unknown as { fail: { remote(m: string): never } }).fail.remote('nope')
    const err = await mp.get(failing, { timeout: 10 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TaskError)
    expect((err as TaskError).remote.message).toBe('nope')
    expect(await mp.get(c.increment.remote())).toBe(1)
  })
})
