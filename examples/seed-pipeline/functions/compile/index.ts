/** compile(key, values, scale): one group's final row. */
import { compile } from '../../stages.ts'

export default compile
