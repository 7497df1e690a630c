/** `magpie new NAME [--actor]`: a function folder to start from, with a test beside it. */
import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { FUNCTION_NAME } from '../gateway/registry/registry.ts'

function camel(name: string): string {
  return name.replace(/[-_]+([a-z0-9])/g, (_, c: string) => c.toUpperCase()).replace(/^[0-9]/, '_$&')
}

function taskSource(name: string): [string, string] {
  const fn = camel(name)
  return [
    `/** ${name}(text): says hello. Call it with \`magpie invoke ${name} '["world"]'\`. */
export const config = { timeoutMs: 60_000, maxRetries: 3 }

export default function ${fn}(text: string): string {
  return \`hello, \${text}\`
}
`,
    `import { describe, expect, it } from 'vitest'
import ${fn} from './index.ts'

describe('${name}', () => {
  it('says hello', () => {
    expect(${fn}('world')).toBe('hello, world')
  })
})
`,
  ]
}

function actorSource(name: string): [string, string] {
  const cls = camel(name).replace(/^./, (c) => c.toUpperCase())
  return [
    `/** ${name}: an actor that counts. Its state lives while it does; its methods run one at a time, in order. */
export default class ${cls} {
  #count: number

  constructor(start = 0) {
    this.#count = start
  }

  add(by = 1): number {
    this.#count += by
    return this.#count
  }
}
`,
    `import { describe, expect, it } from 'vitest'
import ${cls} from './index.ts'

describe('${name}', () => {
  it('counts from where it started', () => {
    const counter = new ${cls}(5)
    expect(counter.add()).toBe(6)
    expect(counter.add(4)).toBe(10)
  })
})
`,
  ]
}

export async function runNew(args: string[], actor: boolean, dir: string | undefined): Promise<number> {
  const [name] = args
  if (!name) throw new Error('usage: magpie new NAME [--actor] [--functions DIR]')
  if (!FUNCTION_NAME.test(name))
    throw new Error(
      `bad function name ${JSON.stringify(name)}: 1 to 63 of a-z, 0-9, _ and -, starting with a letter or digit`,
    )
  const folder = join(resolve(dir ?? 'functions'), name)
  if (existsSync(folder)) throw new Error(`${folder} exists already`)
  const [index, test] = actor ? actorSource(name) : taskSource(name)
  await mkdir(folder, { recursive: true })
  await writeFile(join(folder, 'index.ts'), index)
  await writeFile(join(folder, 'index.test.ts'), test)
  console.log(`wrote ${join(folder, 'index.ts')} and index.test.ts; deploy it with: magpie deploy ${folder}`)
  return 0
}
