/**
 * What each call wrote to stdout and stderr, kept by the node it ran on for
 * `GET /v1/objects/{id}/logs`: bounded in bytes and in age (the oldest
 * calls' lines go first, whole), with the ids whose lines went past that
 * bound remembered, so that asking for them says so (410) rather than
 * answering nothing. Followers of a call get its lines as they come, and
 * learn when it settled.
 */

/** One write of a call: when, to which stream, what. */
export interface LogChunk {
  /** ms since the epoch. */
  t: number
  stream: 'stdout' | 'stderr'
  text: string
}

export interface CallLogsOptions {
  /** Bytes of lines kept, in all. */
  maxBytes: number
  /** How long lines are kept after a call's last write, in ms. */
  maxAgeMs: number
  now?: () => number
}

export type LogFollower = {
  chunk(id: string, chunk: LogChunk): void
  /** The call settled: no more lines will come. */
  end(id: string): void
}

interface Entry {
  fn: string
  chunks: LogChunk[]
  bytes: number
  lastAt: number
}

/** Ids past retention remembered, and parent links kept, at most (oldest forgotten first). */
const MAX_REMEMBERED = 200_000
/** What an entry costs beyond its text (its record, its chunks' records). */
const ENTRY_BYTES = 200
/** How far up the tree of calls followers are looked for. */
const MAX_DEPTH = 64
const CHUNK_BYTES = 64

export class CallLogs {
  readonly #entries = new Map<string, Entry>()
  /** Ids whose lines were dropped for retention (the last MAX_REMEMBERED, in a ring). */
  readonly #dropped = new Set<string>()
  readonly #droppedRing: Array<string | undefined> = new Array(MAX_REMEMBERED)
  #droppedNext = 0
  /**
   * Nested calls: the parent of each (the last MAX_REMEMBERED links, in a
   * ring). Made for every nested call, so kept cheap: the children of a call
   * are found when its logs are read.
   */
  readonly #parents = new Map<string, string>()
  readonly #linkRing: Array<string | undefined> = new Array(MAX_REMEMBERED)
  #linkNext = 0
  /** Followers by the call they follow; `children`: the calls it made too. */
  readonly #followers = new Map<string, Set<{ follower: LogFollower; children: boolean }>>()
  readonly #o: CallLogsOptions
  readonly #now: () => number
  #bytes = 0

  constructor(options: CallLogsOptions) {
    this.#o = options
    this.#now = options.now ?? Date.now
  }

  get bytes(): number {
    return this.#bytes
  }

  /** A call made by another: `children` answers follow this link. */
  link(parent: string, child: string): void {
    if (this.#parents.has(child)) return
    const oldest = this.#linkRing[this.#linkNext]
    if (oldest !== undefined) this.#unlink(oldest)
    this.#linkRing[this.#linkNext] = child
    this.#linkNext = (this.#linkNext + 1) % MAX_REMEMBERED
    this.#parents.set(child, parent)
  }

  #unlink(child: string): void {
    this.#parents.delete(child)
  }

  /** A call wrote. */
  add(id: string, fn: string, chunk: LogChunk): void {
    let entry = this.#entries.get(id)
    if (!entry) {
      entry = { fn, chunks: [], bytes: ENTRY_BYTES, lastAt: chunk.t }
      this.#entries.set(id, entry)
      this.#bytes += ENTRY_BYTES
    }
    const bytes = CHUNK_BYTES + chunk.text.length
    entry.chunks.push(chunk)
    entry.bytes += bytes
    entry.lastAt = chunk.t
    this.#bytes += bytes
    if (this.#followers.size > 0) this.#tell(id, chunk)
    this.#trim()
  }

  /**
   * The lines of a call (and, with `children`, of the calls it made, down
   * the tree), in the order they were written: `gone` if some were dropped
   * for retention.
   */
  read(id: string, children = false): { chunks: LogLine[]; gone: string[] } {
    this.sweep()
    const ids = children ? this.descendants(id) : [id]
    const chunks: LogLine[] = []
    const gone: string[] = []
    for (const each of ids) {
      if (this.#dropped.has(each)) gone.push(each)
      for (const chunk of this.#entries.get(each)?.chunks ?? []) chunks.push({ ...chunk, id: each })
    }
    if (ids.length > 1) chunks.sort((a, b) => a.t - b.t)
    return { chunks, gone }
  }

  /** The call and the calls it made, down the tree, as far as this node knows. */
  descendants(id: string): string[] {
    const children = new Map<string, string[]>()
    for (const [child, parent] of this.#parents) {
      const siblings = children.get(parent)
      if (siblings) siblings.push(child)
      else children.set(parent, [child])
    }
    const ids = [id]
    for (let i = 0; i < ids.length; i++)
      for (const child of children.get(ids[i] as string) ?? []) ids.push(child)
    return ids
  }

  /** Whether a call wrote anything kept here. */
  has(id: string): boolean {
    return this.#entries.has(id)
  }

  /**
   * Gets the lines of `id` (and with `children`, of the calls under it) as
   * they come, until `settled(id)` or the returned function is called.
   */
  follow(id: string, follower: LogFollower, children = false): () => void {
    let set = this.#followers.get(id)
    if (!set) {
      set = new Set()
      this.#followers.set(id, set)
    }
    const entry = { follower, children }
    set.add(entry)
    return () => {
      set.delete(entry)
      if (set.size === 0 && this.#followers.get(id) === set) this.#followers.delete(id)
    }
  }

  /** Tells the followers of the call, and those of the calls above it who follow children. */
  #tell(id: string, chunk: LogChunk): void {
    for (const f of this.#followers.get(id) ?? []) f.follower.chunk(id, chunk)
    let above = this.#parents.get(id)
    for (let depth = 0; above !== undefined && depth < MAX_DEPTH; depth++) {
      for (const f of this.#followers.get(above) ?? []) if (f.children) f.follower.chunk(id, chunk)
      above = this.#parents.get(above)
    }
  }

  /** A call settled: its followers are told, and let go. */
  settled(id: string): void {
    const set = this.#followers.get(id)
    if (!set) return
    this.#followers.delete(id)
    for (const f of set) f.follower.end(id)
  }

  /** Drops the lines older than the age bound. */
  sweep(): void {
    const oldest = this.#now() - this.#o.maxAgeMs
    for (const [id, entry] of this.#entries) {
      // Entries are in order of their first write; one written since is kept, and looked past.
      if (entry.lastAt >= oldest) continue
      this.#drop(id, entry)
    }
  }

  #trim(): void {
    while (this.#bytes > this.#o.maxBytes && this.#entries.size > 0) {
      const [id, entry] = this.#entries.entries().next().value as [string, Entry]
      this.#drop(id, entry)
    }
  }

  #drop(id: string, entry: Entry): void {
    this.#entries.delete(id)
    this.#bytes -= entry.bytes
    const oldest = this.#droppedRing[this.#droppedNext]
    if (oldest !== undefined) this.#dropped.delete(oldest)
    this.#droppedRing[this.#droppedNext] = id
    this.#droppedNext = (this.#droppedNext + 1) % MAX_REMEMBERED
    this.#dropped.add(id)
  }
}

/** A line (a write) of a call, as answered. */
export interface LogLine extends LogChunk {
  id: string
}

/** What a read of a call's logs found: its lines, the ids whose lines went past retention, whether the call is known. */
export interface LogsRead {
  lines: LogLine[]
  gone: string[]
  known: boolean
}

/** Gets a call's lines as they come (see Backend.logs). */
export interface LogsFollow {
  line(line: LogLine): void
  /** No more lines will come: the call settled. */
  end(): void
  /** Aborted when the reader goes away. */
  signal: AbortSignal
}
