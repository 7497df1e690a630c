import { describe, expect, it } from 'vitest'
import { parseBytes } from '../../cli/units.ts'

describe('parseBytes', () => {
  it('reads byte counts, binary and decimal units, and shares of memory', () => {
    expect(parseBytes('x', '67108864')).toBe(64 * 1024 * 1024)
    expect(parseBytes('x', '64MiB')).toBe(64 * 1024 * 1024)
    expect(parseBytes('x', '64m')).toBe(64 * 1024 * 1024)
    expect(parseBytes('x', '1.5GB')).toBe(1_500_000_000)
    expect(parseBytes('x', '2 GiB')).toBe(2 * 1024 ** 3)
    expect(parseBytes('x', '30%', 1000)).toBe(300)
  })

  it('names the flag when a size makes no sense', () => {
    expect(() => parseBytes('object-store-memory', '64 apples')).toThrow(
      /--object-store-memory must be a size/,
    )
    expect(() => parseBytes('spill-limit', '-5MiB')).toThrow(/--spill-limit/)
    expect(() => parseBytes('spill-limit', '0')).toThrow(/more than 0/)
  })
})
