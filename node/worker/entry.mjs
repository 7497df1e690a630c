// Worker threads start here: TypeScript support first, then the worker itself.
import { register } from 'tsx/esm/api'

register()
await import('./main.ts')
