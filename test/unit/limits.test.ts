import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  cgroupCpus,
  cgroupMemory,
  cpuLimit,
  memoryLimit,
  parseCpuMax,
  parseMemoryMax,
} from '../../node/limits.ts'

const FIXTURES = join(import.meta.dirname, '../fixtures/cgroup')
const files = (name: string) => ({
  selfCgroup: join(FIXTURES, name, 'self-cgroup'),
  root: join(FIXTURES, name, 'fs'),
})
const GiB = 2 ** 30

describe('container limits', () => {
  it('reads cgroup v2: the lowest memory.max and cpu.max up the process’s path', () => {
    expect(cgroupMemory(files('v2'))).toBe(2 * GiB)
    expect(cgroupCpus(files('v2'))).toBe(1.5)
    expect(memoryLimit(files('v2'), 16 * GiB)).toBe(2 * GiB)
    expect(memoryLimit(files('v2'), GiB)).toBe(GiB)
    expect(cpuLimit(files('v2'), 8)).toBe(2)
    expect(cpuLimit(files('v2'), 1)).toBe(1)
  })

  it('reads cgroup v1: memory.limit_in_bytes and cpu.cfs_quota_us over cpu.cfs_period_us', () => {
    expect(cgroupMemory(files('v1'))).toBe(512 * 2 ** 20)
    expect(cgroupCpus(files('v1'))).toBe(0.5)
    expect(cpuLimit(files('v1'), 8)).toBe(1)
  })

  it('falls back to the machine without limits, or without cgroup files', () => {
    expect(cgroupMemory(files('none'))).toBeUndefined()
    expect(memoryLimit(files('none'), 8 * GiB)).toBe(8 * GiB)
    expect(cpuLimit(files('none'), 4)).toBe(4)
    expect(cpuLimit(files('missing'), 3)).toBe(3)
  })

  it('parses the files’ forms', () => {
    expect(parseMemoryMax('max')).toBeUndefined()
    expect(parseMemoryMax('9223372036854771712')).toBeUndefined()
    expect(parseMemoryMax('1048576')).toBe(1048576)
    expect(parseCpuMax('max 100000')).toBeUndefined()
    expect(parseCpuMax('200000 100000')).toBe(2)
    expect(parseCpuMax('garbage')).toBeUndefined()
  })
})
