/** The shape of the head's state: its namespaces, a snapshot of it, and the store interface. */

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
