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

  it('leaves /healthz open', async () => {
    expect((await fetch(`${ctx.url}/healthz`)).status).toBe(200)
  })
})
