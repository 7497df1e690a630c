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

/** The namespaces of the head's state. */
export const NAMESPACES = ['meta', 'functions', 'secrets', 'calls', 'objects'] as const
export type Namespace = (typeof NAMESPACES)[number]

export type StateSnapshot = Record<Namespace, Map<string, string>>

export interface StateStore {
  /** Where the state is, for messages (a folder, or a Redis URL without its password). */
  readonly where: string
  /** Everything kept, by namespace. */
  load(): Promise<StateSnapshot>
  set(ns: Namespace, key: string, value: string): void
  delete(ns: Namespace, key: string): void
  /** Resolves once every change so far is written; rejects if writing failed. */
  flushed(): Promise<void>
  close(): Promise<void>
}

export function emptySnapshot(): StateSnapshot {
  return { meta: new Map(), functions: new Map(), secrets: new Map(), calls: new Map(), objects: new Map() }
}

export function isRedisUrl(where: string): boolean {
  return /^rediss?:\/\//.test(where)
}

/** The state store `where` names: a Redis URL, or a folder. */
export function openStateStore(where: string): StateStore {
  return isRedisUrl(where) ? new RedisState(where) : new FolderState(where)
}
