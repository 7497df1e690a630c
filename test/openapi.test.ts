/**
 * GET /openapi.json describes every public route of the gateway, and the
 * same schemas check path parameters and queries before the handlers run.
 */
import { describe, expect, it } from 'vitest'
import { createGateway } from '../gateway/app.ts'
import { openApiPath } from '../gateway/openapi.ts'
import { usePlatform } from './helpers.ts'

const ctx = usePlatform({ cpus: 1 })

/** The routes the gateway serves to clients: all of them but the middleware's catch-alls. */
function servedRoutes(): string[] {
  // Routes are made when the app is; no backend is called until a request comes.
  const { app } = createGateway({ backend: {} as never, functions: {} as never, secrets: {} as never })
  const routes = new Set<string>()
  for (const r of app.routes) {
    if (r.method === 'ALL' || r.path.endsWith('*')) continue
    routes.add(`${r.method.toLowerCase()} ${openApiPath(r.path)}`)
  }
  return [...routes]
}

describe('the OpenAPI document', () => {
  it('is served at /openapi.json and names every public route', async () => {
    const res = await fetch(`${ctx.url}/openapi.json`)
    expect(res.status).toBe(200)
    const doc = (await res.json()) as {
      openapi: string
      info: { version: string }
      paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string }> }>>
    }
    expect(doc.openapi).toBe('3.1.0')
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`)),
    )
    const served = servedRoutes()
    expect(served.length).toBeGreaterThan(25)
    for (const route of served) expect(documented, route).toContain(route)
    for (const route of documented) expect(served, route).toContain(route)
    const logs = doc.paths['/v1/objects/{id}/logs']?.get
    expect(logs?.parameters?.map((p) => `${p.in} ${p.name}`)).toEqual([
      'path id',
      'query follow',
      'query children',
      'query timestamps',
    ])
  })

  it('checks path parameters and queries with the same schemas: 400 naming what is wrong', async () => {
    const cases: Array<[string, RegExp]> = [
      ['/v1/objects/short', /bad object id/],
      ['/v1/objects/AAAAAAAAAAAAAAAAAAAAA?wait=99', /wait must be a number of seconds from 0 to 60/],
      ['/v1/tasks?state=sleeping', /state must be one of/],
      ['/v1/objects?limit=lots', /limit must be an integer/],
      ['/v1/objects/AAAAAAAAAAAAAAAAAAAAA/logs?follow=maybe', /follow must be 1 or 0/],
    ]
    for (const [path, message] of cases) {
      const res = await fetch(`${ctx.url}${path}`)
      expect(res.status, path).toBe(400)
      const body = (await res.json()) as { error: { code: string; message: string } }
      expect(body.error.code).toBe('BAD_REQUEST')
      expect(body.error.message).toMatch(message)
    }
  })
})
