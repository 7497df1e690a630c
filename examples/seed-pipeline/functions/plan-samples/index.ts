/** plan-samples(source, data): the samples of a prepared source. */
import { planSamples } from '../../stages.ts'

export default planSamples
