/** `magpie start`: the embedded platform until SIGINT or SIGTERM. */
import { resolve } from 'node:path'
import { startPlatform } from '../gateway/platform.ts'

export interface StartFlags {
  port?: string | undefined
  host?: string | undefined
  cpus?: string | undefined
  functions?: string | undefined
  token?: string | undefined
}

function integerFlag(name: string, raw: string | undefined, min: number): number | undefined {
  if (raw === undefined) return undefined
  const value = Number(raw)
  if (!/^\d+$/.test(raw) || value < min) throw new Error(`--${name} must be an integer of at least ${min}`)
  return value
}

export async function runStart(flags: StartFlags): Promise<number> {
  const port = integerFlag('port', flags.port, 0) ?? 8080
  if (port > 65535) throw new Error('--port must be at most 65535')
  const cpus = integerFlag('cpus', flags.cpus, 1)
  const platform = await startPlatform({
    functionsDir: resolve(flags.functions ?? 'functions'),
    port,
    host: flags.host ?? '127.0.0.1',
    token: flags.token,
    ...(cpus === undefined ? {} : { cpus }),
  })
  console.log(`magpie listening on ${platform.url}`)
  await new Promise<void>((done) => {
    const stop = (signal: string) => {
      console.log(`magpie: ${signal}, stopping`)
      platform.close().then(done, done)
    }
    process.once('SIGINT', () => stop('SIGINT'))
    process.once('SIGTERM', () => stop('SIGTERM'))
  })
  return 0
}
