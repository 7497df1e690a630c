/**
 * A call's logs: `GET /v1/objects/{id}/logs` answers what it wrote to stdout
 * and stderr, as text. `?children=1` adds the lines of the calls it made
 * (down the tree), each line prefixed `[id]`; `?timestamps=1` prefixes each
 * line with the time it was written; `?follow=1` streams the lines to come
 * until the call settles. Lines past the node's retention answer 410
 * LOGS_GONE, never nothing.
 */
import { Hono } from 'hono'
import { stream } from 'hono/streaming'
import type { Backend } from '../../node/backend.ts'
import type { LogLine } from '../../node/call-logs.ts'
import { FollowedLogs } from '../../node/http/follow-logs.ts'
import { BadRequestError, LogsGoneError, ObjectNotFoundError } from '../../sdk/errors.ts'
import { checkId } from '../http-input.ts'

/** How a line is shown: its text, prefixed as asked. */
export function formatLines(lines: readonly LogLine[], prefixId: boolean, timestamps: boolean): string {
  if (!prefixId && !timestamps) return lines.map((l) => l.text).join('')
  let out = ''
  for (const line of lines) {
    const prefix = `${timestamps ? `${new Date(line.t).toISOString()} ` : ''}${prefixId ? `[${line.id}] ` : ''}`
    const text = line.text.endsWith('\n') ? line.text.slice(0, -1) : line.text
    for (const part of text.split('\n')) out += `${prefix}${part}\n`
  }
  return out
}

function flag(value: string | undefined, name: string): boolean {
  if (value === undefined || value === '0' || value === 'false') return false
  if (value === '' || value === '1' || value === 'true') return true
  throw new BadRequestError(`${name} must be 1 or 0`)
}

export function logRoutes(backend: Backend): Hono {
  const app = new Hono()

  app.get('/objects/:id/logs', async (c) => {
    const id = checkId(c.req.param('id'))
    const children = flag(c.req.query('children'), 'children')
    const follow = flag(c.req.query('follow'), 'follow')
    const timestamps = flag(c.req.query('timestamps'), 'timestamps')
    const show = (lines: readonly LogLine[]) => formatLines(lines, children, timestamps)
    c.header('content-type', 'text/plain; charset=utf-8')
    c.header('cache-control', 'no-store')
    if (!follow) {
      const read = await backend.logs(id, children)
      if (read.gone.includes(id)) throw gone(id)
      if (!read.known) throw new ObjectNotFoundError(`no call ${id}`)
      return c.body(goneNote(read.gone) + show(read.lines))
    }
    const followed = new FollowedLogs()
    const read = await backend.logs(id, children, followed.follow)
    if (read.gone.includes(id) || !read.known) {
      followed.stop()
      throw read.known ? gone(id) : new ObjectNotFoundError(`no call ${id}`)
    }
    return stream(c, async (out) => {
      await out.write(goneNote(read.gone) + show(read.lines))
      await followed.pipe(out, show)
    })
  })

  return app
}

function gone(id: string): LogsGoneError {
  return new LogsGoneError(
    `the lines of call ${id} are past its node's log retention (magpie start --log-retention)`,
  )
}

function goneNote(ids: readonly string[]): string {
  return ids.map((id) => `[magpie: the lines of call ${id} are past its node's log retention]\n`).join('')
}
