/**
 * A stand-in for a model: scoring costs a fixed overhead per call (loading
 * weights into cache, launching a kernel) plus a little per item, as with a
 * real model on a GPU or a vectorized CPU path. Busy time, not sleep: it
 * holds its core as real inference would.
 */
export const OVERHEAD_MS = 4
export const PER_ITEM_MS = 0.05

export interface Review {
  text: string
}

export interface Score {
  label: 'positive' | 'negative'
  score: number
}

function busy(ms: number): void {
  const end = performance.now() + ms
  while (performance.now() < end) {}
}

const POSITIVE = ['good', 'great', 'love', 'fine', 'excellent']

/** Scores a batch of reviews: one overhead for all of them. */
export function scoreBatch(reviews: Review[]): Score[] {
  busy(OVERHEAD_MS + PER_ITEM_MS * reviews.length)
  return reviews.map(({ text }) => {
    const words = String(text).toLowerCase().split(/\W+/)
    const hits = words.filter((w) => POSITIVE.includes(w)).length
    const score = Math.min(1, hits / 3)
    return { label: score >= 0.34 ? 'positive' : 'negative', score }
  })
}
