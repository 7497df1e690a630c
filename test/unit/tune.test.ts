/** The search spaces and ASHA's rule, on their own. */
import { describe, expect, it } from 'vitest'
import { Asha, choice, configsOf, grid, loguniform, randint, uniform } from '../../sdk/tune.ts'

describe('search spaces', () => {
  it('crosses grids, repeats them numSamples times, and draws sampled values anew, within range', () => {
    let seed = 1
    const random = () => {
      seed = (seed * 16807) % 2147483647
      return seed / 2147483647
    }
    const configs = configsOf(
      {
        a: grid([1, 2]),
        b: grid(['x', 'y', 'z']),
        lr: loguniform(1e-4, 1e-1),
        n: randint(1, 4),
        c: choice([true]),
        u: uniform(0, 1),
        k: 7,
      },
      2,
      random,
    )
    expect(configs).toHaveLength(12)
    expect(configs.slice(0, 6).map((c) => `${c.a}${c.b}`)).toEqual(['1x', '1y', '1z', '2x', '2y', '2z'])
    for (const c of configs) {
      expect(c.lr as number).toBeGreaterThanOrEqual(1e-4)
      expect(c.lr as number).toBeLessThan(1e-1)
      expect([1, 2, 3]).toContain(c.n)
      expect(c).toMatchObject({ c: true, k: 7 })
    }
    expect(new Set(configs.map((c) => c.lr)).size).toBe(12)
  })

  it('refuses empty grids and empty ranges', () => {
    expect(() => grid([])).toThrow(TypeError)
    expect(() => uniform(2, 1)).toThrow(TypeError)
    expect(() => loguniform(0, 1)).toThrow(TypeError)
  })
})

describe('ASHA', () => {
  it('puts rungs at grace × rf^k below maxT and keeps the best third at each', () => {
    const asha = new Asha({ maxT: 27, gracePeriod: 1, reductionFactor: 3 })
    // Higher is better: the first at a rung goes on; then only those in the best third so far.
    expect(asha.onStep(1, 5)).toBe(true)
    expect(asha.onStep(1, 1)).toBe(false)
    expect(asha.onStep(1, 2)).toBe(false)
    expect(asha.onStep(1, 9)).toBe(true)
    // Between rungs, every trial goes on; at maxT, none.
    expect(asha.onStep(2, -100)).toBe(true)
    expect(asha.onStep(3, 0)).toBe(true)
    expect(asha.onStep(3, -1)).toBe(false)
    expect(asha.onStep(27, 100)).toBe(false)
  })
})
