#!/usr/bin/env node
// The magpie command: TypeScript support first, then the CLI.
import { register } from 'tsx/esm/api'

register()
await import('../cli/main.ts')
