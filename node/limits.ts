/**
 * What this process may use, as defaults follow it: the machine's memory and
 * cores, or, in a container, its cgroup's limits when they are lower
 * (`memory.max` and `cpu.max` of cgroup v2, `memory.limit_in_bytes` and
 * `cpu.cfs_quota_us` of v1), walking up the process's cgroup path.
 */
import { readFileSync } from 'node:fs'
import { availableParallelism, totalmem } from 'node:os'
import { join } from 'node:path'

/** Where the files are (tests point them at fixtures). */
export interface CgroupFiles {
  /** /proc/self/cgroup */
  selfCgroup: string
  /** /sys/fs/cgroup */
  root: string
}

const SYSTEM: CgroupFiles = { selfCgroup: '/proc/self/cgroup', root: '/sys/fs/cgroup' }

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim()
  } catch {
    return undefined
  }
}

/** The cgroup folders of this process, innermost first, for a v2 hierarchy or a v1 controller. */
function cgroupDirs(files: CgroupFiles, controller: string | undefined): string[] {
  const lines = (read(files.selfCgroup) ?? '').split('\n')
  const line = controller
    ? lines.find((l) => l.split(':')[1]?.split(',').includes(controller))
    : lines.find((l) => l.startsWith('0::'))
  if (!line) return []
  const path = line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1)
  // A v1 controller is mounted under the names it shares a hierarchy with ("cpu,cpuacct").
  const base = controller ? join(files.root, line.split(':')[1] as string) : files.root
  const parts = path.split('/').filter(Boolean)
  const dirs: string[] = []
  for (let i = parts.length; i >= 0; i--) dirs.push(join(base, ...parts.slice(0, i)))
  return dirs
}

/** `memory.max` (v2): bytes, or undefined for `max` or no file. */
export function parseMemoryMax(text: string | undefined): number | undefined {
  if (text === undefined || text === 'max') return undefined
  const bytes = Number(text)
  // v1 says "no limit" with a huge number (a page-rounded 2^63).
  return Number.isFinite(bytes) && bytes > 0 && bytes < 2 ** 60 ? bytes : undefined
}

/** `cpu.max` (v2): "QUOTA PERIOD" or "max PERIOD", as cores (fractions kept), or undefined. */
export function parseCpuMax(text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  const [quota, period = '100000'] = text.split(/\s+/)
  if (quota === undefined || quota === 'max') return undefined
  const cores = Number(quota) / Number(period)
  return Number.isFinite(cores) && cores > 0 ? cores : undefined
}

/** The lowest of the limits that are set, if any is. */
function lowestOf(limits: Array<number | undefined>): number | undefined {
  const set = limits.filter((l): l is number => l !== undefined)
  return set.length === 0 ? undefined : Math.min(...set)
}

/** The lowest memory limit of this process's cgroups, in bytes, if any. */
export function cgroupMemory(files: CgroupFiles = SYSTEM): number | undefined {
  return lowestOf([
    ...cgroupDirs(files, undefined).map((dir) => parseMemoryMax(read(join(dir, 'memory.max')))),
    ...cgroupDirs(files, 'memory').map((dir) => parseMemoryMax(read(join(dir, 'memory.limit_in_bytes')))),
  ])
}

/** A v1 CPU quota, in cores: `cpu.cfs_quota_us` over `cpu.cfs_period_us` (-1: none). */
function cfsCores(dir: string): number | undefined {
  const quota = read(join(dir, 'cpu.cfs_quota_us'))
  if (quota === undefined || quota === '-1') return undefined
  return parseCpuMax(`${quota} ${read(join(dir, 'cpu.cfs_period_us')) ?? '100000'}`)
}

/** The lowest CPU quota of this process's cgroups, in cores (fractions kept), if any. */
export function cgroupCpus(files: CgroupFiles = SYSTEM): number | undefined {
  return lowestOf([
    ...cgroupDirs(files, undefined).map((dir) => parseCpuMax(read(join(dir, 'cpu.max')))),
    ...cgroupDirs(files, 'cpu').map(cfsCores),
  ])
}

/** Bytes of memory this process may use: the machine's, or its container's limit if lower. */
export function memoryLimit(files: CgroupFiles = SYSTEM, machine = totalmem()): number {
  const constrained = files === SYSTEM ? (process.constrainedMemory?.() ?? 0) : 0
  const limits = [machine, cgroupMemory(files), constrained > 0 ? constrained : undefined]
  return Math.min(...limits.filter((l): l is number => l !== undefined && l > 0))
}

/** Worker threads by default: one per core this process may use (its container's quota, rounded up). */
export function cpuLimit(files: CgroupFiles = SYSTEM, machine = availableParallelism()): number {
  const quota = cgroupCpus(files)
  return Math.max(1, Math.min(machine, quota === undefined ? machine : Math.ceil(quota)))
}
