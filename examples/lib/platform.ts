/**
 * Where an example runs: the platform at `url` (its functions deployed
 * there first), or else `magpie start` on this machine with them, stopped
 * once the example is done.
 */
import { startPlatformProcess } from '../../bench/lib/platform-process.ts'
import { runDeploy } from '../../cli/deploy.ts'

export async function withPlatform<T>(
  options: { url?: string | undefined; functions: string; cpus?: number },
  run: (url: string) => Promise<T>,
): Promise<T> {
  if (options.url) {
    await runDeploy(options.url, process.env.MAGPIE_ADMIN_TOKEN ?? process.env.MAGPIE_TOKEN, [
      options.functions,
    ])
    return run(options.url)
  }
  const cpus = options.cpus === undefined ? [] : ['--cpus', String(options.cpus)]
  const platform = await startPlatformProcess([
    ...cpus,
    '--functions',
    options.functions,
    '--log-level',
    'warn',
  ])
  try {
    return await run(platform.url)
  } finally {
    await platform.stop()
  }
}
