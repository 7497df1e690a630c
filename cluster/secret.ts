/**
 * The cluster secret: checked on every internal request (in constant time),
 * read from a file, and kept on disk for a head that restarts. It is never
 * printed: the join command that carries it goes to a file only its owner
 * can read.
 */
import { timingSafeEqual } from 'node:crypto'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { MiddlewareHandler } from 'hono'
import { nanoid } from 'nanoid'
import { MagpieError } from '../sdk/errors.ts'
import { SECRET_HEADER } from './protocol.ts'

/** 403 for internal requests without the cluster secret. */
export function requireClusterSecret(secret: string): MiddlewareHandler {
  const expected = Buffer.from(secret)
  return async function requireSecret(c, next) {
    const given = Buffer.from(c.req.header(SECRET_HEADER) ?? '')
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new MagpieError('the cluster secret is missing or wrong', { code: 'FORBIDDEN' })
    }
    await next()
  }
}

/** Secrets shorter than this are refused: a guessable secret opens every node. */
const MIN_SECRET = 16

/** The secret if it is long enough; else an error that says where it came from (never the secret). */
export function checkSecret(secret: string, from: string): string {
  if (secret.length < MIN_SECRET)
    throw new Error(`the cluster secret from ${from} is shorter than ${MIN_SECRET} characters`)
  return secret
}

/** A secret from a file: its first line, trimmed. */
export async function readSecretFile(path: string): Promise<string> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    throw new Error(`cannot read the secret file ${path}: ${(err as NodeJS.ErrnoException).code ?? err}`)
  }
  return checkSecret(text.split('\n')[0]?.trim() ?? '', path)
}

/** Writes `text` to a file only its owner can read or write. */
async function writePrivate(path: string, text: string): Promise<void> {
  await writeFile(path, text, { mode: 0o600 })
  await chmod(path, 0o600) // also when the file was there already, with looser rights
}

/**
 * The head's secret: the one given, else the one its state folder kept from
 * an earlier start (so that nodes get back in after a restart), else a new
 * one, kept there. Returns it and the path of the file that holds it.
 */
export async function headSecret(
  stateDir: string,
  given: string | undefined,
): Promise<{ secret: string; file: string }> {
  await mkdir(stateDir, { recursive: true })
  const file = join(stateDir, 'cluster-secret')
  let secret = given
  if (secret === undefined) {
    try {
      secret = await readSecretFile(file)
    } catch {
      secret = nanoid(32)
    }
  }
  await writePrivate(file, `${secret}\n`)
  return { secret, file }
}

/** Writes the command that joins a node to this head, secret included, beside the secret; returns its path. */
export async function writeJoinCommand(
  stateDir: string,
  headUrl: string,
  secretFile: string,
): Promise<string> {
  const file = join(stateDir, 'join-command')
  const secret = await readSecretFile(secretFile)
  await writePrivate(
    file,
    `# Start a node that joins this head (keep this file private: it holds the cluster secret).\n` +
      `MAGPIE_CLUSTER_SECRET=${secret} magpie start --join ${headUrl}\n` +
      `# or, with the secret file copied to the node's host:\n` +
      `# magpie start --join ${headUrl} --secret-file ${secretFile}\n`,
  )
  return file
}
