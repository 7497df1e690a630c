/** Liveness, readiness, metrics and the node list. */
import { Hono } from 'hono'
import type { Backend } from '../../node/backend.ts'
import type { GatewayMetrics } from '../metrics.ts'

export function healthRoutes(backend: Backend, { registry }: GatewayMetrics): Hono {
  const app = new Hono()
  app.get('/metrics', async (c) =>
    c.text(await registry.metrics(), 200, { 'content-type': registry.contentType }),
  )
  app.get('/healthz', (c) => c.json({ status: 'ok' }))
  app.get('/readyz', (c) =>
    backend.ready() ? c.json({ status: 'ready' }) : c.json({ status: 'starting' }, 503),
  )
  // Their latency histograms are for /metrics.
  app.get('/v1/nodes', (c) => c.json(backend.nodes().map(({ latency: _, ...node }) => node)))
  return app
}
