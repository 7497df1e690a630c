/** Liveness, readiness, metrics and the node list. */
import { Hono } from 'hono'
import type { Backend } from '../../node/backend.ts'
import { createMetrics } from '../metrics.ts'

export function healthRoutes(backend: Backend): Hono {
  const app = new Hono()
  const metrics = createMetrics(backend)
  app.get('/metrics', async (c) =>
    c.text(await metrics.metrics(), 200, { 'content-type': metrics.contentType }),
  )
  app.get('/healthz', (c) => c.json({ status: 'ok' }))
  app.get('/readyz', (c) =>
    backend.ready() ? c.json({ status: 'ready' }) : c.json({ status: 'starting' }, 503),
  )
  app.get('/v1/nodes', (c) => c.json(backend.nodes()))
  return app
}
