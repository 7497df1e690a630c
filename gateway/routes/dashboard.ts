/**
 * The dashboard at `GET /`: one static page (gateway/dashboard/index.html,
 * no build step) that polls the public API once a second. The gateway keeps
 * nothing for it: whatever runs, an open dashboard costs the gateway only
 * the requests it makes.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { Hono } from 'hono'

const PAGE = 'gateway/dashboard/index.html'

/** The page's path: under the first folder up from here that has it (the sources, or a bundle's root). */
function pagePath(): string | undefined {
  for (let dir = import.meta.dirname; ; dir = dirname(dir)) {
    if (existsSync(join(dir, PAGE))) return join(dir, PAGE)
    if (dirname(dir) === dir) return undefined
  }
}

export function dashboardRoutes(): Hono {
  const app = new Hono()
  let page: string | undefined
  app.get('/', (c) => {
    page ??= readFileSync(pagePath() ?? PAGE, 'utf8')
    c.header('cache-control', 'no-store')
    c.header(
      'content-security-policy',
      "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'",
    )
    return c.html(page)
  })
  return app
}
