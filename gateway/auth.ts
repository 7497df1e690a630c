/** Bearer-token guard for the public API. */
import { timingSafeEqual } from 'node:crypto'
import type { MiddlewareHandler } from 'hono'
import { MagpieError } from '../sdk/errors.ts'

export function bearerToken(token: string): MiddlewareHandler {
  const expected = Buffer.from(token)
  return async function requireBearerToken(c, next) {
    const header = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '')
    if (!header) throw new MagpieError('an Authorization: Bearer token is required', { code: 'UNAUTHORIZED' })
    const given = Buffer.from(header[1] as string)
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new MagpieError('the token is not valid', { code: 'FORBIDDEN' })
    }
    await next()
  }
}
