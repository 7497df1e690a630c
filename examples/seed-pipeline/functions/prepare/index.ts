/** prepare(source, scale): load and prepare one source; its 2 MiB stay in the cluster, read by reference. */
import { prepare } from '../../stages.ts'

export default prepare
