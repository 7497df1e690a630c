// The ceiling for HTTP throughput: a bare Hono POST handler on @hono/node-server,
// reading the body and answering 202 with a small JSON body, as magpie's invoke does.
import { serve } from '@hono/node-server'
import { Hono } from 'hono'

const app = new Hono()
app.post('/invoke', async (c) => {
  await c.req.text()
  return c.json({ id: 'aaaaaaaaaaaaaaaaaaaaa', status: 'pending' }, 202)
})
const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
  console.log(`listening on http://127.0.0.1:${info.port}`)
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
