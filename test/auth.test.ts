/** With a token configured, every /v1 call needs it. */
import { describe, expect, it } from 'vitest'
import { connect, MagpieError } from '../sdk/index.ts'
import { usePlatform } from './helpers.ts'

const ctx = usePlatform({ token: 's3cret-token', cpus: 1 })

describe('token', () => {
  it('answers 401 without a token and 403 with a wrong one', async () => {
    const none = await fetch(`${ctx.url}/v1/functions`)
    expect(none.status).toBe(401)
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED')
    const wrong = await fetch(`${ctx.url}/v1/functions`, { headers: { authorization: 'Bearer nope' } })
    expect(wrong.status).toBe(403)
  })

  it('serves the SDK when it sends the token', async () => {
    const mp = connect(ctx.url, { token: 's3cret-token' })
    expect(await mp.get(mp.remote('square').remote(7))).toBe(49)
    await mp.close()
    const anonymous = connect(ctx.url)
    await expect(anonymous.get(anonymous.remote('square').remote(7))).rejects.toBeInstanceOf(MagpieError)
    await anonymous.close()
  })

  it('takes the token only as a Bearer token', async () => {
    const bare = await fetch(`${ctx.url}/v1/functions`, { headers: { authorization: 's3cret-token' } })
    expect(bare.status).toBe(401)
    const basic = await fetch(`${ctx.url}/v1/functions`, { headers: { authorization: 'Basic s3cret-token' } })
    expect(basic.status).toBe(401)
  })

  it('wants the token for /metrics too', async () => {
    expect((await fetch(`${ctx.url}/metrics`)).status).toBe(401)
    const metrics = await fetch(`${ctx.url}/metrics`, { headers: { authorization: 'Bearer s3cret-token' } })
    expect(metrics.status).toBe(200)
    expect(await metrics.text()).toContain('magpie_')
  })

  it('leaves /healthz and /readyz open', async () => {
    expect((await fetch(`${ctx.url}/healthz`)).status).toBe(200)
    expect((await fetch(`${ctx.url}/readyz`)).status).toBe(200)
  })
})
