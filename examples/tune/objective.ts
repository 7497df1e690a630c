/**
 * A synthetic training run with a known best point: the loss after `step`
 * steps is ((x - 3)² + (y + 1)² + 0.5) × (1 + 4 / step), so every config
 * improves with steps, their order never changes, and the best is x = 3,
 * y = -1. Each step holds the CPU for `stepMs`, as a real step would.
 */
export interface Config {
  x: number
  y: number
  stepMs?: number
}

export const BEST = { x: 3, y: -1 }

export function lossAt(config: Config, step: number): number {
  return ((config.x - 3) ** 2 + (config.y + 1) ** 2 + 0.5) * (1 + 4 / step)
}

export function work(ms: number): void {
  const end = performance.now() + ms
  while (performance.now() < end) {}
}

/** A config this example says diverges: its trial fails, and the search goes on. */
export function diverges(config: Config): boolean {
  return config.x === 0 && config.y === 1
}
