/** `connect()`: to a gateway over HTTP, or to local mode in this process. */
import { Client, type ConnectOptions } from './client.ts'
import { fromEnv } from './env-vars.ts'
import type { LocalOptions } from './local.ts'
import { LocalClient } from './local-client.ts'

/**
 * Connects to a magpie gateway: `url`, else `$MAGPIE_URL`, else
 * `http://127.0.0.1:8080`; the token from `options.token`, else `$MAGPIE_TOKEN`.
 * `'local:'` (or no url with `MAGPIE_LOCAL=1`) runs the same API in this
 * process, with the functions of `options.functions` (default `./functions`).
 * @example
 * const mp = connect() // MAGPIE_URL and MAGPIE_TOKEN
 * const dev = connect('local:', { functions: './functions' })
 */
export function connect(url?: string, options: ConnectOptions & LocalOptions = {}): Client {
  const local = url === undefined ? fromEnv('MAGPIE_LOCAL') : undefined
  if (url?.startsWith('local:') || (local !== undefined && local !== '0' && local !== 'false')) {
    return new LocalClient(options)
  }
  const token = options.token ?? fromEnv('MAGPIE_TOKEN')
  return new Client(url ?? fromEnv('MAGPIE_URL') ?? 'http://127.0.0.1:8080', {
    ...options,
    ...(token === undefined ? {} : { token }),
  })
}
