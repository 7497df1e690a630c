/**
 * Where a head keeps what must outlive it: a folder by default, Redis when
 * `--state` is a `redis://` URL (so that a head on another machine can take
 * over). Both hold string values under keys, in a few namespaces, and write
 * in batches: every change made in one turn of the event loop goes out
 * together, and `flushed()` resolves once it is written (to the operating
 * system for a folder, acknowledged for Redis), so that an answer given after
 * it survives the head being killed.
 */
import { FolderState } from './folder.ts'
import { RedisState } from './redis.ts'
import type { StateStore } from './types.ts'

export { emptySnapshot, NAMESPACES, type Namespace, type StateSnapshot, type StateStore } from './types.ts'

export function isRedisUrl(where: string): boolean {
  return /^rediss?:\/\//.test(where)
}

/** The state store `where` names: a Redis URL, or a folder. */
export function openStateStore(where: string): StateStore {
  return isRedisUrl(where) ? new RedisState(where) : new FolderState(where)
}
