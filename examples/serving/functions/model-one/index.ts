/** model-one: the same model, one review per call (no batching), to compare with. */
import { type Review, type Score, scoreBatch } from '../../model.ts'

export default function modelOne(review: Review): Score {
  return scoreBatch([review])[0] as Score
}
