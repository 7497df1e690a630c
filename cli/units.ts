/** Sizes on the command line: `67108864`, `64MiB`, `1.5GB`, `512m`, or `30%` of the memory this process may use (the machine's, or its container's limit). */
import { memoryLimit } from '../node/limits.ts'

const UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1024,
  kib: 1024,
  kb: 1000,
  m: 1024 ** 2,
  mib: 1024 ** 2,
  mb: 1000 ** 2,
  g: 1024 ** 3,
  gib: 1024 ** 3,
  gb: 1000 ** 3,
  t: 1024 ** 4,
  tib: 1024 ** 4,
  tb: 1000 ** 4,
}

/**
 * Bytes in a size flag: binary units (KiB, MiB, GiB, TiB, and k, m, g, t as
 * Docker reads them), decimal ones (kB, MB, GB, TB), or a percentage of RAM.
 * Throws with the flag's name on anything else.
 */
export function parseBytes(name: string, raw: string, total = memoryLimit()): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*|%)\s*$/.exec(raw)
  const unit = match?.[2]?.toLowerCase()
  const factor = unit === '%' ? total / 100 : unit === undefined ? undefined : UNITS[unit]
  if (!match || factor === undefined) {
    throw new Error(`--${name} must be a size such as 67108864, 64MiB, 2GB or 30%: ${raw}`)
  }
  const bytes = Math.floor(Number(match[1]) * factor)
  if (!(bytes > 0)) throw new Error(`--${name} must be more than 0 bytes: ${raw}`)
  return bytes
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** A duration flag (`90s`, `30m`, `1h`, `2d`; a bare number is seconds), in ms. */
export function parseDuration(name: string, raw: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(raw)
  const ms = match ? Number(match[1]) * (DURATION_UNITS[match[2] ?? 's'] ?? 1000) : Number.NaN
  if (!(ms > 0)) throw new Error(`--${name} takes a duration such as 90s, 30m, 1h or 2d: ${raw}`)
  return ms
}

/** `--log-retention SIZE[,AGE]` (64MiB,1h): the bytes of call logs a node keeps, and for how long. */
export function parseLogRetention(raw: string, defaults: { bytes: number; ageMs: number }) {
  const [size = '', age = ''] = raw.split(',')
  return {
    bytes: size.trim() === '' ? defaults.bytes : parseBytes('log-retention', size),
    ageMs: age.trim() === '' ? defaults.ageMs : parseDuration('log-retention', age),
  }
}

/** Bytes as a person reads them: 0 B, 512 B, 1.5 KiB, 64.0 MiB, 2.1 GiB. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`
}
