/**
 * model: scores one review per call, batched: concurrent calls arrive here
 * together (up to 32, waiting at most 5 ms for more), and each caller gets
 * its own score back.
 */
import { type Review, type Score, scoreBatch } from '../../model.ts'

export const config = { batch: { maxSize: 32, maxWaitMs: 5 } }

export default function model(reviews: Review[]): Score[] {
  return scoreBatch(reviews)
}
