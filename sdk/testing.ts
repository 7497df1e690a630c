/**
 * `import { local } from 'magpie/testing'`: unit-test function folders in
 * this process with the client's API (local mode), no platform to start.
 * @example
 * const mp = local('./functions')
 * afterEach(() => mp.reset())
 * test('square', async () => expect(await mp.call('square', 4)).toBe(16))
 */

import type { LocalOptions } from './local.ts'
import { LocalClient } from './local-client.ts'

export type { FunctionModule, LocalOptions } from './local.ts'
export { LocalClient } from './local-client.ts'

/** A local-mode client on a folder of function folders (default `./functions`), or on modules by name. */
export function local(
  functions?: LocalOptions['functions'],
  options: Omit<LocalOptions, 'functions'> = {},
): LocalClient {
  return new LocalClient({ ...options, ...(functions === undefined ? {} : { functions }) })
}
