/**
 * The head's actors: where each lives, its name, and what to make it again
 * from. An actor is made on a node chosen by its `numCpus` and `resources`;
 * its constructor and then its method calls are placed on that node, in the
 * order they come, through the head's dispatcher (never stolen). When its
 * node dies it is made again on another (`maxRestarts`), first its
 * constructor, then the calls that were in flight as `maxTaskRetries`
 * allows; else it is dead and its calls fail with ACTOR_DIED. A restart
 * inside a node (its thread died) is the node's own (node/actors.ts).
 */
import type { ActorInfo, ActorSpec } from '../../node/actors.ts'
import { ActorNotFoundError, MagpieError, NameTakenError } from '../../sdk/errors.ts'
import type { InternalClient } from '../client.ts'
import { warn } from '../log.ts'
import type { WireArg } from '../protocol.ts'
import type { Directory } from './directory.ts'
import { capable, place } from './placement.ts'
import type { NodeRegistry } from './registry.ts'

interface HeadActor {
  spec: ActorSpec
  node: string | undefined
  restarts: number
  dead: boolean
  /** Its latest checkpoint, as its node told: restored when it is made again elsewhere. */
  checkpoint?: WireArg | undefined
  error?: ActorInfo['error']
}

export interface HeadActorsOptions {
  registry: NodeRegistry
  directory: Directory
  client: InternalClient
  /** Places a call (the constructor's or a method's) on the actor's node. */
  place(spec: ActorSpec | (ActorSpec & { actor: NonNullable<ActorSpec['actor']> })): void
}

export class HeadActors {
  readonly #actors = new Map<string, HeadActor>()
  readonly #names = new Map<string, string>()
  readonly #o: HeadActorsOptions

  constructor(options: HeadActorsOptions) {
    this.#o = options
  }

  /** Makes an actor on a node that can hold it; the existing one if its name is held and `getIfExists`. */
  create(spec: ActorSpec, getIfExists: boolean): { id: string; created: boolean } {
    const held = spec.name === undefined ? undefined : this.#names.get(spec.name)
    if (held !== undefined) {
      if (getIfExists) return { id: held, created: false }
      throw new NameTakenError(`an actor named ${spec.name} exists already`)
    }
    if (this.#actors.has(spec.id)) return { id: spec.id, created: false }
    const node = this.#choose(spec)
    this.#actors.set(spec.id, { spec, node: node, restarts: 0, dead: false })
    if (spec.name !== undefined) this.#names.set(spec.name, spec.id)
    this.#o.directory.create(spec.id, spec.fn, {
      owned: true,
      ttlMs: spec.options.ttlS && spec.options.ttlS * 1000,
    })
    this.#o.place({ ...spec, actor: { id: spec.id, method: null } })
    return { id: spec.id, created: true }
  }

  /** An actor a node made inside a function: known here, so that other nodes' calls reach it. */
  adopt(spec: ActorSpec, node: string): void {
    if (this.#actors.has(spec.id)) return
    const name = spec.name !== undefined && !this.#names.has(spec.name) ? spec.name : undefined
    this.#actors.set(spec.id, { spec: { ...spec, name }, node, restarts: 0, dead: false })
    if (name !== undefined) this.#names.set(name, spec.id)
  }

  /** An actor's latest checkpoint, from its node. */
  checkpointed(id: string, state: WireArg): void {
    const a = this.#actors.get(id)
    if (a && !a.dead) a.checkpoint = state
  }

  /** The class (name@version) of a known actor. */
  classOf(id: string): string | undefined {
    return this.#actors.get(id)?.spec.fn
  }

  find(idOrName: string): string | undefined {
    return this.#actors.has(idOrName) ? idOrName : this.#names.get(idOrName)
  }

  /** The node an actor lives on now; undefined if it is dead (or has no node). */
  nodeOf(id: string): string | undefined {
    const a = this.#actors.get(id)
    return a && !a.dead ? a.node : undefined
  }

  /** Whether a method call of the actor may be placed now; throws ActorNotFoundError if it is unknown. */
  check(id: string): void {
    if (!this.#actors.has(id)) throw new ActorNotFoundError(`no actor ${id}`)
  }

  /** What the head knows of an actor, with what its node says of it (state, calls waiting), if it answers. */
  async info(id: string): Promise<ActorInfo | undefined> {
    const a = this.#actors.get(id)
    if (!a) return undefined
    const record = this.#o.directory.lookup(id)
    const node = a.node ? this.#o.registry.get(a.node) : undefined
    const there =
      node && !a.dead ? await this.#o.client.actor(node.address, id).catch(() => undefined) : undefined
    // Dead on its node (killed there, or idle past its TTL): dead here too, and its name free.
    if (there?.state === 'dead' && !a.dead) {
      this.#bury(a, there.error ?? { code: 'ACTOR_DIED', message: `actor ${id} died on node ${a.node}` })
    }
    const state = a.dead
      ? 'dead'
      : (there?.state ??
        (record?.status === 'failed' ? 'dead' : record?.status === 'ready' ? 'alive' : 'pending'))
    return {
      id,
      class: a.spec.fn,
      name: a.spec.name ?? null,
      state,
      restarts: a.restarts + (there?.restarts ?? 0),
      pending: there?.pending ?? 0,
      node: a.node,
      ...((a.error ?? record?.error) ? { error: a.error ?? record?.error } : {}),
    }
  }

  async list(): Promise<ActorInfo[]> {
    return (await Promise.all([...this.#actors.keys()].map((id) => this.info(id)))).flatMap((i) => i ?? [])
  }

  /** Kills an actor where it lives; its name is free at once. False if unknown or dead. */
  async kill(id: string): Promise<boolean> {
    const a = this.#actors.get(id)
    if (!a || a.dead) return false
    this.#bury(a, { code: 'ACTOR_DIED', message: `actor ${id} was killed` })
    const node = a.node ? this.#o.registry.get(a.node) : undefined
    if (node) {
      await this.#o.client.killActor(node.address, id).catch((err: unknown) => {
        warn('a node did not hear an actor killed', { node: node.id, actor: id, cause: err })
      })
    }
    return true
  }

  /**
   * A node died: its actors are made again elsewhere while their restarts
   * last (their constructor placed before any call), else they are dead.
   */
  nodeDied(nodeId: string): void {
    for (const a of this.#actors.values()) {
      if (a.dead || a.node !== nodeId) continue
      const max = a.spec.options.maxRestarts ?? 0
      const node = a.restarts < max ? this.#choose(a.spec, false) : undefined
      if (!node) {
        this.#bury(a, { code: 'ACTOR_DIED', message: `actor ${a.spec.id} died with node ${nodeId}` })
        continue
      }
      a.restarts += 1
      a.node = node
      const again = `${a.spec.id}_h${a.restarts}`
      this.#o.directory.create(again, a.spec.fn, {})
      this.#o.place({
        ...a.spec,
        id: again,
        actor: { id: a.spec.id, method: null, ...(a.checkpoint ? { restore: a.checkpoint } : {}) },
      })
    }
  }

  #bury(a: HeadActor, error: NonNullable<ActorInfo['error']>): void {
    a.dead = true
    a.error = error
    if (a.spec.name !== undefined && this.#names.get(a.spec.name) === a.spec.id)
      this.#names.delete(a.spec.name)
  }

  /** A live node that can hold the actor (NO_CAPACITY if none, when `strict`). */
  #choose(spec: ActorSpec, strict = true): string | undefined {
    const node = place(capable(this.#o.registry.alive(), spec.options), () => 0)
    if (!node && strict)
      throw new MagpieError(`no live node can hold an actor of ${spec.fn} (cpus or resources)`, {
        code: 'NO_CAPACITY',
      })
    return node?.id
  }
}
