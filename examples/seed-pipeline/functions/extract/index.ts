/** extract(source, sample, data, scale): one sample's results; `data` is the source's prepared bytes. */
import { extract } from '../../stages.ts'

export default extract
