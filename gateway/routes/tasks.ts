/** The calls seen lately: `GET /v1/tasks?state=&function=&since=&limit=`, newest first, from every node. */
import { Hono } from 'hono'
import type { Backend } from '../../node/backend.ts'
import { parseTaskFilter } from '../../node/recent-tasks.ts'

export function taskRoutes(backend: Backend): Hono {
  const app = new Hono()
  app.get('/tasks', async (c) => c.json(await backend.tasks(parseTaskFilter((k) => c.req.query(k)))))
  return app
}
