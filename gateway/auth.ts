/**
 * Bearer-token guards for the public API: the token for every /v1 route, and
 * the admin token (if one is set) for what runs code: deploys, removals and
 * secrets. The admin token is taken wherever the token is.
 */
import { timingSafeEqual } from 'node:crypto'
import type { MiddlewareHandler } from 'hono'
import { MagpieError } from '../sdk/errors.ts'

function same(given: Buffer, expected: Buffer): boolean {
  return given.length === expected.length && timingSafeEqual(given, expected)
}

/** A check of an Authorization header: throws 401 without a Bearer token, 403 unless it is one of `tokens`. */
export function bearerCheck(
  ...tokens: Array<string | undefined>
): (authorization: string | undefined) => void {
  const expected = tokens.filter((t): t is string => !!t).map((t) => Buffer.from(t))
  return (authorization) => {
    const header = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')
    if (!header) throw new MagpieError('an Authorization: Bearer token is required', { code: 'UNAUTHORIZED' })
    const given = Buffer.from(header[1] as string)
    if (!expected.some((e) => same(given, e)))
      throw new MagpieError('the token is not valid', { code: 'FORBIDDEN' })
  }
}

/** 401 without a Bearer token, 403 unless it is one of `tokens`. */
export function bearerToken(...tokens: Array<string | undefined>): MiddlewareHandler {
  const check = bearerCheck(...tokens)
  return async function requireBearerToken(c, next) {
    check(c.req.header('authorization'))
    await next()
  }
}

/** The guard of deploys and secrets: the admin token if one is set; else nothing more than the token's. */
export function adminToken(admin: string | undefined): MiddlewareHandler {
  if (!admin) return async (_c, next) => next()
  const guard = bearerToken(admin)
  return async function requireAdminToken(c, next) {
    try {
      await guard(c, () => Promise.resolve())
    } catch (err) {
      throw new MagpieError(`deploys and secrets need the admin token: ${(err as Error).message}`, {
        code: (err as MagpieError).code,
      })
    }
    await next()
  }
}
