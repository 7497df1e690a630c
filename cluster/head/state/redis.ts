/**
 * The head's state in Redis (`--state redis://HOST:PORT[/DB]`): one hash per
 * namespace (`magpie:calls`, `magpie:objects`, ...), written in pipelined
 * batches. A head on another machine pointed at the same Redis takes over.
 */
import type { Redis } from 'ioredis'
import { BatchedState, type Change } from './batched.ts'
import { emptySnapshot, NAMESPACES, type Namespace, type StateSnapshot } from './types.ts'

const PREFIX = 'magpie:'
/** How long a command may wait for Redis before it fails (and with it the batch). */
const COMMAND_TIMEOUT_MS = 10_000

/** A URL fit to print: without its password. */
function withoutPassword(url: string): string {
  const parsed = new URL(url)
  if (parsed.password) parsed.password = '***'
  return parsed.href
}

export class RedisState extends BatchedState {
  readonly where: string
  readonly #url: string
  #client: Redis | undefined

  constructor(url: string) {
    super()
    this.where = withoutPassword(url)
    this.#url = url
  }

  get #redis(): Redis {
    if (!this.#client) throw new Error(`the state in ${this.where} is not open`)
    return this.#client
  }

  async load(): Promise<StateSnapshot> {
    // Loaded only by a head that keeps its state in Redis.
    const { Redis } = await import('ioredis')
    this.#client = new Redis(this.#url, {
      lazyConnect: true,
      maxRetriesPerRequest: 2,
      commandTimeout: COMMAND_TIMEOUT_MS,
      // The head says what failed where it matters; ioredis's own reports would repeat it.
      showFriendlyErrorStack: false,
    })
    this.#client.on('error', () => {})
    try {
      await this.#redis.connect()
    } catch (err) {
      throw new Error(`cannot reach Redis at ${this.where}: ${(err as Error).message}`)
    }
    const snapshot = emptySnapshot()
    for (const ns of NAMESPACES) {
      const hash = await this.#redis.hgetall(PREFIX + ns)
      for (const [key, value] of Object.entries(hash)) snapshot[ns].set(key, value)
    }
    return snapshot
  }

  protected async write(changes: Change[]): Promise<void> {
    const pipeline = this.#redis.pipeline()
    for (const { ns, key, value } of changes) {
      const hash = PREFIX + (ns satisfies Namespace)
      if (value === undefined) pipeline.hdel(hash, key)
      else pipeline.hset(hash, key, value)
    }
    const results = (await pipeline.exec()) ?? []
    const failed = results.find(([err]) => err)
    if (failed) throw new Error(`Redis at ${this.where} refused a write: ${(failed[0] as Error).message}`)
  }

  protected async release(): Promise<void> {
    const client = this.#client
    await client?.quit().catch(() => client.disconnect())
  }
}
