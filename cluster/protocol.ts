/**
 * The protocol between a head and its nodes, and between nodes: every
 * message's type and its runtime check (zod schemas: the type is inferred
 * from the check, so they cannot drift apart), the routes they travel on,
 * the secret header, the inline limit and the rules of node and object ids.
 * A receiver checks a body once, with `read`, and trusts it afterwards.
 */
import { nanoid } from 'nanoid'
import { z } from 'zod'
import type { TaskArg } from '../node/worker/messages.ts'
import { asBuffer, toShared } from '../node/worker/shared-bytes.ts'
import { isObjectId } from '../sdk/codec.ts'
import { BadRequestError, ERROR_STATUS, type ErrorCode, type SerializedError } from '../sdk/errors.ts'
import { type CallOptions, checkCallOptions } from '../sdk/types.ts'

/** The header every internal request carries the cluster secret in. */
export const SECRET_HEADER = 'x-magpie-secret'

/** Results up to this size travel to their owner inline; bigger ones stay where they were made. */
export const INLINE_MAX = 100 * 1024

/**
 * Every internal route, as Hono patterns; the internal client fills in the
 * `:id`s. Nodes serve all but the head's four; the head serves those and
 * `object` (the objects it owns) and `objectMeta`.
 */
export const ROUTES = {
  /** head: a node registers (RegisterRequest → RegisterAnswer). */
  register: '/internal/nodes',
  /** head: a node's load (NodeStats → HeartbeatAnswer); 404 means "register again". */
  heartbeat: '/internal/nodes/:id/heartbeat',
  /** head: a node stops, handing back the calls it had not started (Leave). */
  leave: '/internal/nodes/:id/leave',
  /** head or node: results of calls the receiver owns (SettledReport). */
  settled: '/internal/settled',
  /** node: calls placed on it (Call[] → TaskAnswer). */
  tasks: '/internal/tasks',
  /** node: a peer with nothing to do asks for work (StealRequest → StealAnswer). */
  steal: '/internal/steal',
  /** node: a peer has calls queued that it cannot start: come and take some (Nudge). */
  nudge: '/internal/nudge',
  /** head or node: calls the receiver owns that were stolen from where they were (Moved). */
  moved: '/internal/moved',
  /** node: owners that have copied big results of calls stolen from them (Release). */
  release: '/internal/release',
  /** an object's value (`?wait=S`, `?seen=1`), PUT to store one (`?ttlMs=`), DELETE to free it. */
  object: '/internal/objects/:id',
  /** node: cancel a call placed or stolen here (Cancel). */
  cancel: '/internal/objects/:id/cancel',
  /** an object's status without its value (`?wait=S`): ObjectMeta. */
  objectMeta: '/internal/objects/:id/meta',
  /** head: the latest version of every deployed function (FunctionList). */
  functions: '/internal/functions',
  /** head: the code of a version, `name@version` as the id (FunctionCode). */
  functionCode: '/internal/functions/:id',
  /** node: an actor living here (its ActorInfo); DELETE kills it. */
  actor: '/internal/actors/:id',
  /** head: a node made an actor inside a function (ActorMade), for others to find it. */
  actors: '/internal/actors',
  /** head: the id of a live actor, by name or id (`{"id"}`), for a function that looks for it. */
  actorByName: '/internal/actor-names/:id',
  /** head: an actor's latest checkpoint (ActorCheckpoint), to restore it on another node should its own die. */
  actorCheckpoint: '/internal/actors/:id/checkpoint',
  /** head: a method call from inside a function, of an actor on another node (Call, with actor). */
  actorCalls: '/internal/actor-calls',
  /**
   * node: what a call wrote here (`?children=1`: and the calls under it;
   * `?follow=1`: and what comes, until it settles here or the reader goes; a
   * call not known here is followed until the reader goes), as
   * NDJSON: `{"read": LogsRead}`, then `{"line": LogLine}`s, then `{"end": true}`.
   */
  logs: '/internal/logs/:id',
  /** node: the calls it saw lately (`?state=&function=&since=&limit=`), as JSON (TaskRecord[]). */
  recentTasks: '/internal/recent-tasks',
  /** node: its biggest objects (`?limit=`), with what holds them (HeldObjects). */
  biggestObjects: '/internal/biggest-objects',
} as const

/** Node ids: `n` and six letters or digits; the ids of objects a node makes start with it and `_`. */
export const NODE_ID = /^n[A-Za-z0-9]{6}$/

export function newNodeId(): string {
  return `n${nanoid(6).replace(/[-_]/g, 'x')}`
}

/** The node an object id names as its owner, if it names one. */
export function ownerOf(objectId: string): string | undefined {
  const match = /^(n[A-Za-z0-9]{6})_/.exec(objectId)
  return match?.[1]
}

/** Whether a node with these CPUs and resources could run a call with these options. */
export function canRun(options: CallOptions, cpus: number, resources: Record<string, number>): boolean {
  if ((options.numCpus ?? 1) > cpus) return false
  // Own properties only: a resource named like an Object method ("toString") is just a name.
  return Object.entries(options.resources ?? {}).every(
    ([name, amount]) => (Object.hasOwn(resources, name) ? (resources[name] as number) : 0) >= amount,
  )
}

/** Hosts a process listens on that no peer can connect to. */
const UNSPECIFIED = new Set(['0.0.0.0', '::', '[::]', ''])

/** Whether a URL names a host others can reach (not 0.0.0.0 or ::). */
export function isReachableUrl(url: string): boolean {
  try {
    const { protocol, hostname } = new URL(url)
    return (protocol === 'http:' || protocol === 'https:') && !UNSPECIFIED.has(hostname)
  } catch {
    return false
  }
}

/** Checks `body` against `schema`; a 400 naming the first problem if it does not fit. */
export function read<T extends z.ZodType>(schema: T, body: unknown, what: string): z.output<T> {
  const result = schema.safeParse(body)
  if (result.success) return result.data
  const issue = result.error.issues[0]
  const where = issue && issue.path.length > 0 ? `.${issue.path.join('.')}` : ''
  throw new BadRequestError(`${what}${where}: ${issue?.message ?? 'malformed'}`)
}

/** A JSON request body checked against `schema`: 400 if it is not JSON, or does not fit. */
export async function readBody<T extends z.ZodType>(
  req: { text(): Promise<string> },
  schema: T,
  what: string,
): Promise<z.output<T>> {
  let body: unknown
  try {
    body = JSON.parse(await req.text())
  } catch {
    throw new BadRequestError(`${what}: the body is not JSON`)
  }
  return read(schema, body, what)
}

const objectId = z.string().refine(isObjectId, 'not an object id')
const nodeId = z.string().regex(NODE_ID, 'not a node id')
const url = z.string().refine(isReachableUrl, 'must be an http URL with a reachable host (not 0.0.0.0 or ::)')
const count = z.number().int().nonnegative()
const resources = z.record(z.string(), z.number().nonnegative())

const errorCode = z.string().refine((c): c is ErrorCode => Object.hasOwn(ERROR_STATUS, c), 'unknown code')
/** An error as it travels: the contract's shape, with a known code. */
export const serializedError: z.ZodType<SerializedError> = z.lazy(() =>
  z.object({
    code: errorCode as unknown as z.ZodType<ErrorCode>,
    message: z.string(),
    name: z.string().optional(),
    stack: z.string().optional(),
    attempts: z.number().optional(),
    cause: serializedError.and(z.object({ id: z.string().optional() })).optional(),
  }),
) as z.ZodType<SerializedError>

const callOptions = z.unknown().transform((value, ctx): CallOptions => {
  try {
    // From the head or a peer: a call's options as placed, its function's config (env, secrets) merged in.
    return checkCallOptions(value, 'options', true)
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message })
    return z.NEVER
  }
})

/** An argument on the wire: as in a node, but bytes travel as base64 inside the JSON batch. */
export const WireArg = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('json'), text: z.string() }),
  z.object({ kind: z.literal('base64'), data: z.string() }),
  z.object({ kind: z.literal('ref'), id: objectId, at: url.optional() }),
])
export type WireArg = z.infer<typeof WireArg>

/** An argument for the wire: bytes as base64. */
export function toWireArg(arg: TaskArg): WireArg {
  if (arg.kind === 'bytes') return { kind: 'base64', data: asBuffer(arg.bytes).toString('base64') }
  if (arg.kind === 'ref') return arg.at === undefined ? { kind: 'ref', id: arg.id } : arg
  return arg
}

/** An argument from the wire, bytes in shared memory. */
export function fromWireArg(arg: WireArg): TaskArg {
  if (arg.kind === 'base64') return { kind: 'bytes', bytes: toShared(Buffer.from(arg.data, 'base64')) }
  if (arg.kind === 'ref') return arg.at === undefined ? { kind: 'ref', id: arg.id } : arg
  return arg
}

/** A call, as the head places it on a node. */
export const Call = z.object({
  id: objectId,
  fn: z.string().min(1),
  args: z.array(WireArg),
  options: callOptions,
  /**
   * Which placement of the call this is (the owner's count of them, from 1;
   * 0 for a call made inside a function): a report names it, so that an
   * owner can tell a stale report from one about the call as it runs now.
   */
  epoch: count.default(0),
  /** A call of an actor living on the receiver: its constructor (method null), or a method. */
  actor: z
    .object({
      id: objectId,
      method: z.string().nullable(),
      /** With a constructor: the actor's last checkpoint, to restore once it is made (it is made again). */
      restore: WireArg.optional(),
    })
    .optional(),
  /** The call whose function made this one, if one did: its logs are found under that call's too. */
  parent: objectId.optional(),
})
export type Call = z.infer<typeof Call>
export const CallBatch = z.array(Call)
export const TaskAnswer = z.object({ accepted: z.array(objectId) })

/** Another node, as the head tells: whom to steal from and where its objects are. */
export const Peer = z.object({
  id: nodeId,
  address: url,
  queued: count,
  running: count.default(0),
  cpus: count,
})
export type Peer = z.infer<typeof Peer>

export const RegisterRequest = z.object({
  /** The id the node wants (kept across re-registrations, so that its objects' ids stay its own). */
  id: nodeId.optional(),
  address: url,
  cpus: z.number().int().positive(),
  resources: resources.default({}),
})
export type RegisterRequest = z.infer<typeof RegisterRequest>
/**
 * The head's answers carry `functions`, the revision of its deployed
 * functions: a node that has another asks for the list (FunctionList).
 */
export const RegisterAnswer = z.object({ id: nodeId, peers: z.array(Peer), functions: count.default(0) })
export type RegisterAnswer = z.infer<typeof RegisterAnswer>

const taskCounts = z.object({ finished: count, failed: count })
const amount = z.object({ count, bytes: count })
const histogram = z.object({ counts: z.array(count), sum: z.number().nonnegative(), count })
/** A node's load and counters, sent with every heartbeat. */
export const Heartbeat = z.object({
  cpus: count,
  running: count,
  queued: count,
  steals: count,
  objects: z.object({
    count,
    bytes: count,
    spilledCount: count,
    spilledBytes: count,
    spills: amount,
    restores: amount,
    freed: count,
  }),
  tasks: z.record(z.string(), taskCounts),
  threadBytes: z.object({ copied: count, shared: count }),
  stolen: z.object({ in: count, out: count }),
  fetched: amount,
  latency: z
    .object({ durations: z.record(z.string(), histogram), waits: z.record(z.string(), histogram) })
    .default({ durations: {}, waits: {} }),
  process: z
    .object({ rss: count, heapUsed: count, cpuSeconds: z.number().nonnegative() })
    .default({ rss: 0, heapUsed: 0, cpuSeconds: 0 }),
})
/** The calls a node saw lately (see node/recent-tasks.ts). */
export const RecentTasks = z.array(
  z.object({
    id: z.string(),
    function: z.string(),
    actor: z.string().optional(),
    worker: z.number().int().nullable(),
    state: z.enum(['queued', 'running', 'finished', 'failed', 'cancelled']),
    queuedAt: z.number(),
    startedAt: z.number().nullable(),
    finishedAt: z.number().nullable(),
    error: z.object({ code: z.string(), message: z.string() }).passthrough().optional(),
  }),
)

/** A node's biggest objects (see ObjectStore.biggest). */
export const HeldObjects = z.array(
  z.object({
    id: z.string(),
    size: count,
    contentType: z.string().nullable(),
    function: z.string().nullable(),
    where: z.enum(['memory', 'disk', 'elsewhere']),
    heldBy: z.object({ calls: count, values: count, handles: count }),
    ttlS: count.nullable(),
  }),
)

/** The head's answer: the live peers, and the nodes it has taken for dead (their calls are to be run again by their owners). */
export const HeartbeatAnswer = z.object({
  peers: z.array(Peer),
  dead: z.array(nodeId).default([]),
  functions: count.default(0),
})
export type HeartbeatAnswer = z.infer<typeof HeartbeatAnswer>

export const Leave = z.object({ ids: z.array(objectId) })

/** An actor a node made inside a function, as it tells the head. */
export const ActorMade = z.object({
  id: objectId,
  class: z.string(),
  name: z.string().optional(),
  node: nodeId,
  options: callOptions,
})
export type ActorMade = z.infer<typeof ActorMade>

/** An actor's checkpoint, as its node tells the head. */
export const ActorCheckpoint = z.object({ state: WireArg })

/** An actor as the node it lives on tells of it. */
export const ActorState = z.object({
  id: objectId,
  class: z.string(),
  name: z.string().nullable(),
  state: z.enum(['pending', 'alive', 'restarting', 'dead']),
  restarts: count,
  pending: count,
  error: serializedError.optional(),
})

/** A deployed version of a function, as nodes learn it: calls of it name it as `ref` (`name@version`). */
export const FunctionEntry = z.object({
  name: z.string(),
  ref: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}@[0-9a-f]{12}$/, 'not name@version'),
  kind: z.enum(['function', 'actor']),
  config: callOptions,
  /** Its calls' variables, granted secrets' values included: never logged. */
  env: z.record(z.string(), z.string()).default({}),
})
export type FunctionEntry = z.infer<typeof FunctionEntry>
/** The latest version of every function, at a revision of the head's list. */
export const FunctionList = z.object({ revision: count, functions: z.array(FunctionEntry) })
export type FunctionList = z.infer<typeof FunctionList>
/** A version's code (one ES module) and config. */
export const FunctionCode = FunctionEntry.extend({ code: z.string() })
export type FunctionCode = z.infer<typeof FunctionCode>

/**
 * How a call settled, reported to its owner. `lost`: its result could not be
 * delivered; the owner treats the call as it would one on a node that died
 * (runs it again if its retries allow, else fails it with WORKER_CRASHED).
 */
export const Settled = z.object({
  id: objectId,
  status: z.enum(['ready', 'failed', 'cancelled', 'lost']),
  size: count,
  contentType: z.string().nullable(),
  attempts: count,
  /** The placement of the call this is about (see Call.epoch). */
  epoch: count.default(0),
  error: serializedError.optional(),
  /** The JSON text of a small result. */
  value: z.string().optional(),
})
export type Settled = z.infer<typeof Settled>
export const SettledReport = z.object({ node: nodeId, address: url, objects: z.array(Settled) })
export type SettledReport = z.infer<typeof SettledReport>

export const StealRequest = z.object({
  /** The thief: the owners of what it takes are told it runs there. */
  id: nodeId,
  address: url,
  /** Big objects the thief holds already: calls taking them are given first. */
  holds: z.array(objectId).max(1024),
  cpus: z.number().int().positive(),
  resources: resources.default({}),
})
export type StealRequest = z.infer<typeof StealRequest>
/** A node with calls waiting that it cannot start, to an idle peer: `queued` of them. */
export const Nudge = z.object({ id: nodeId, queued: count })
export type Nudge = z.infer<typeof Nudge>
/** A stolen call, and the URL of its owner, to whom its result goes: the head, or the node that made it. */
export const StolenCall = Call.extend({ owner: url })
export type StolenCall = z.infer<typeof StolenCall>
export const StealAnswer = z.object({ calls: z.array(StolenCall) })

export const Release = z.object({ ids: z.array(objectId) })

/** How a call is cancelled (see LocalNode.cancel). */
export const Cancel = z.object({ force: z.boolean(), recursive: z.boolean() })

/**
 * Calls that moved to another node by a steal, told to their owner by the
 * node they moved from: the owner then knows whose death to watch for
 * (`epoch`: the placement they belong to, see Call.epoch).
 */
export const Moved = z.object({
  calls: z.array(z.object({ id: objectId, epoch: count, thief: nodeId })),
})
export type Moved = z.infer<typeof Moved>

/** An object's status as a node reports it, without its value. */
export const ObjectMeta = z.object({
  id: objectId,
  status: z.enum(['pending', 'running', 'ready', 'failed', 'cancelled']),
  error: serializedError.optional(),
  size: count,
  contentType: z.string().nullable(),
  function: z.string().nullable(),
  attempts: count,
  createdAt: z.number(),
  ttlMs: z.number().positive(),
  /** A copy of an object owned elsewhere. */
  cached: z.boolean(),
})
export type ObjectMeta = z.infer<typeof ObjectMeta>

/** `?wait=S` of an internal read: 0 to 60 seconds. */
export function waitSeconds(raw: string | undefined): number {
  const value = Number(raw ?? 0)
  return Number.isFinite(value) && value > 0 ? Math.min(value, 60) : 0
}
