/** A call as the node tracks it, from submission to its result, and why an argument can fail it. */

import type { SerializedError } from '../sdk/errors.ts'
import type { CallOptions } from '../sdk/types.ts'
import { heldIdsInJson, type ObjectEntry } from './store/object-store.ts'
import type { TaskArg } from './worker/messages.ts'

/** A deployed version of a function, as a node runs it. */
export interface CatalogEntry {
  /** `name@version`: calls of it are placed, stolen and reported under it. */
  ref: string
  url: string
  config: CallOptions
  /** Its calls' variables: config.env and the values of the secrets config.secrets grants (none: undefined). */
  env?: Readonly<Record<string, string>> | undefined
}

/** What a node needs to know of the deployed functions. */
export interface FunctionCatalog {
  /** The latest version of a function, or the version `name@version` names, if this node has it. */
  get(ref: string): CatalogEntry | undefined
  /** Fetches a version this node does not have yet, where it can (a joined node asks its head); false if there is none. */
  ensure?(ref: string): Promise<boolean>
  names(): string[]
  onChange(listener: () => void): () => void
}

/** A call as submitted, to the gateway or from inside a function. */
export interface TaskSpec {
  id: string
  fn: string
  args: TaskArg[]
  options: CallOptions
  /** A call of an actor (fn is its class): its constructor (method null), or a method. */
  actor?: { id: string; method: string | null } | undefined
  /** The call whose function made this one, if one did (its logs' `children` follow it). */
  parent?: string | undefined
}

export interface Task extends TaskSpec {
  url: string
  /** The call's variables, from its function's version on this node. */
  env: Readonly<Record<string, string>> | undefined
  /** Share of a worker's CPU slot the call takes while it runs (1 / concurrency). */
  weight: number
  attempts: number
  maxRetries: number
  /** Whether a call that threw `name` runs again (while retries last). */
  retriesOn(name: string | undefined): boolean
  /** Worker whose task submitted this one, for depth-first placement. */
  origin: number | undefined
  /** Bytes of its arguments counted as waiting (0 once it runs, or if it was never counted). */
  waitingBytes: number
  /** Fires when the call runs past its timeoutMs. */
  timer?: ReturnType<typeof setTimeout> | undefined
  /** An actor method call's place among its actor's calls. */
  actorSeq?: number
  /** When it was submitted here, and when it last went to a thread (ms since the epoch). */
  queuedAt?: number | undefined
  startedAt?: number | undefined
  /** Of a batch (the function's `config.batch`): the calls it runs as one, in order; each gets its item of the result. */
  members?: Task[] | undefined
}

export const DEFAULT_MAX_RETRIES = 3

/** A task for `spec`, its options over the function's config. */
export function makeTask(spec: TaskSpec, fn: CatalogEntry, origin?: number): Task {
  const options = { ...fn.config, ...spec.options }
  // A plain literal: spreading `spec` and then overriding one of its keys
  // sends V8 down a slow path that leaves the object in dictionary mode.
  return {
    id: spec.id,
    // The version it is made with: it runs on it wherever it goes.
    fn: fn.ref,
    args: spec.args,
    options,
    url: fn.url,
    env: fn.env,
    // An actor's call holds no CPU slot while it runs (as in Ray): its actor's thread runs its calls in turn.
    weight: spec.actor ? 0 : 1 / (options.concurrency ?? 1),
    attempts: 0,
    // An actor's method runs again after its thread died only as maxTaskRetries allows; its constructor, by maxRestarts.
    maxRetries: spec.actor
      ? spec.actor.method === null
        ? 0
        : (options.maxTaskRetries ?? 0)
      : (options.maxRetries ?? DEFAULT_MAX_RETRIES),
    retriesOn: retryRule(options.retryExceptions),
    origin,
    waitingBytes: 0,
    actor: spec.actor,
    actorSeq: undefined,
    parent: spec.parent,
    queuedAt: undefined,
    startedAt: undefined,
    members: undefined,
  }
}

const NEVER = () => false
const ALWAYS = () => true

function retryRule(rule: CallOptions['retryExceptions']): (name: string | undefined) => boolean {
  if (rule === true) return ALWAYS
  if (!Array.isArray(rule)) return NEVER
  return (name) => name !== undefined && rule.includes(name)
}

/** The distinct objects a task takes as top-level `$ref` arguments. */
export function refArguments(task: TaskSpec): string[] {
  const ids: string[] = []
  for (const arg of task.args) if (arg.kind === 'ref' && !ids.includes(arg.id)) ids.push(arg.id)
  return ids
}

/** Every object a task's arguments refer to: its top-level refs, and the `$ref`s and `$actor`s inside JSON arguments. */
export function argumentIds(task: TaskSpec): string[] {
  const ids = new Set<string>()
  for (const arg of task.args) {
    if (arg.kind === 'ref') ids.add(arg.id)
    else if (arg.kind === 'json') for (const id of heldIdsInJson(arg.text)) ids.add(id)
  }
  return [...ids]
}

/** Why an argument object cannot be used, or undefined if it can (Ray's rule: its failure is the task's). */
export function argumentProblem(id: string, entry: ObjectEntry | undefined): SerializedError | undefined {
  if (!entry) return { code: 'OBJECT_NOT_FOUND', message: `argument ${id} does not exist (freed or expired)` }
  if (entry.status === 'ready') return undefined
  const cause = entry.error ?? { code: 'TASK_CANCELLED' as const, message: 'cancelled' }
  return {
    code: cause.code,
    message: `argument ${id} failed: ${cause.message}`,
    ...(cause.name === undefined ? {} : { name: cause.name }),
    cause: { ...cause, id },
  }
}

export function lostArgument(id: string): SerializedError {
  return { code: 'OBJECT_LOST', message: `argument ${id} is no longer stored` }
}
