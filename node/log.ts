/**
 * The platform's own log (pino), on stderr: one JSON object a line when
 * stderr is not a terminal (for a log shipper), readable lines when it is.
 * Every warning and every request goes here, with its fields; what calls
 * write is theirs, on stdout and in their logs (see log-printer.ts).
 * Nothing here is ever handed a token or the cluster secret.
 */

import { createRequire } from 'node:module'
import pino, { type Logger } from 'pino'
import type PinoPretty from 'pino-pretty'

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent'
export const LOG_LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']

/** What the log may buffer while stderr's reader is slow, before it drops lines (a stalled reader never stops the platform). */
const MAX_BUFFER_BYTES = 16 * 2 ** 20
/**
 * Lines are written 8 KiB at a time, and at least every 200 ms (and at exit):
 * a write per line (an access line per request) cost a busy gateway a fifth
 * of its requests a second.
 */
const WRITE_BYTES = 8192
const FLUSH_MS = 200

/** pino's ISO time, formatted once a millisecond: a busy gateway writes several access lines in one. */
let stampedMs = 0
let stamp = ''
function isoTime(): string {
  const now = Date.now()
  if (now !== stampedMs) {
    stampedMs = now
    stamp = `,"time":"${new Date(now).toISOString()}"`
  }
  return stamp
}

function make(level: LogLevel): Logger {
  // pino-pretty is loaded only for a terminal: a platform logging JSON, or a node, never loads it.
  const destination = process.stderr.isTTY
    ? (createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty)({
        destination: 2,
        colorize: true,
        translateTime: 'SYS:HH:MM:ss.l',
        ignore: 'pid,hostname',
      })
    : pino.destination({
        fd: 2,
        sync: false,
        maxLength: MAX_BUFFER_BYTES,
        minLength: WRITE_BYTES,
        periodicFlush: FLUSH_MS,
      })
  return pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  )
}

export function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value)
}

const initial = process.env.MAGPIE_LOG_LEVEL ?? 'info'
let logger = make(isLogLevel(initial) ? initial : 'info')

/** The platform's logger. */
export function log(): Logger {
  return logger
}

/** Sets the level (`--log-level`), and fields every line carries from now on (`role`, `node`). */
export function configureLog(level: LogLevel | undefined, fields: Record<string, string> = {}): void {
  if (level !== undefined) logger.level = level
  if (Object.keys(fields).length > 0) logger = logger.child(fields)
}

/** Logs a warning with the fields that explain it (an Error field is logged as its message). */
export function warn(message: string, fields: Record<string, unknown> = {}): void {
  const clean: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(fields)) {
    if (value !== undefined) clean[key] = value instanceof Error ? value.message : value
  }
  logger.warn(clean, message)
}
