/**
 * The internal client: the only code that knows the internal URLs and the
 * secret header. Every message of the protocol is a method here, sent as
 * its type says and its answer checked before it is returned.
 */
import type { Readable } from 'node:stream'
import { request } from 'undici'
import type { z } from 'zod'
import type { ActorInfo } from '../node/actors.ts'
import type { LogLine, LogsRead } from '../node/call-logs.ts'
import { type TaskFilter, type TaskRecord, taskFilterQuery } from '../node/recent-tasks.ts'
import type { HeldObject } from '../node/store/object-store.ts'
import { toShared } from '../node/worker/shared-bytes.ts'
import { BYTES_TYPE, type EncodedValue, JSON_TYPE } from '../sdk/codec.ts'
import { ERROR_STATUS, errorFromBody, MagpieError } from '../sdk/errors.ts'
import {
  type ActorMade,
  ActorState,
  type Call,
  FunctionCode,
  FunctionList,
  type Heartbeat,
  HeartbeatAnswer,
  HeldObjects,
  type Moved,
  type Nudge,
  ObjectMeta,
  RecentTasks,
  RegisterAnswer,
  type RegisterRequest,
  ROUTES,
  read,
  SECRET_HEADER,
  type SettledReport,
  StealAnswer,
  type StealRequest,
  type StolenCall,
  TaskAnswer,
  type WireArg,
} from './protocol.ts'
import { rawGet } from './raw-get.ts'

/** How long a node looks for an object another node should have, before it believes it is gone (the call making it may still be on its way there). */
const UNKNOWN_GRACE_MS = 3000

type Route = (typeof ROUTES)[keyof typeof ROUTES]

/** A call as sent: its options as the sender holds them (checked again by the receiver). */
export type OutgoingCall = z.input<typeof Call>

/**
 * Whether a failed internal request is worth trying again: the peer could not
 * be reached, was overloaded or broke (5xx); a 4xx answer will not change.
 */
export function isTransient(err: unknown): boolean {
  if (!(err instanceof MagpieError)) return true
  const status = ERROR_STATUS[err.code] ?? 500
  return status >= 500 || status === 429
}

/** Error codes of a connection that could not be made or was cut. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
])

/** Whether a request failed because the other process could not be reached (not because it answered). */
export function isUnreachable(err: unknown): boolean {
  return UNREACHABLE.has((err as NodeJS.ErrnoException | undefined)?.code ?? '')
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

export class InternalClient {
  readonly #secret: string

  constructor(secret: string) {
    if (secret.length === 0) throw new TypeError('the cluster secret must not be empty')
    this.#secret = secret
  }

  /** The cluster secret as a header, for the few requests made without this client's methods (raw GETs). */
  get #auth(): Record<string, string> {
    return { [SECRET_HEADER]: this.#secret }
  }

  #url(base: string, route: Route, id = '', query = ''): string {
    return `${base}${route.replace(':id', encodeURIComponent(id))}${query}`
  }

  /** Sends JSON (or nothing) and reads the answer; throws the error a 4xx or 5xx carries. */
  async #send(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown): Promise<unknown> {
    const response = await request(url, {
      method,
      headers: { ...this.#auth, 'content-type': JSON_TYPE },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const text = await response.body.text()
    if (response.statusCode >= 400) throw errorFromBody(parseJson(text), response.statusCode)
    return text === '' ? undefined : parseJson(text)
  }

  async register(head: string, body: RegisterRequest): Promise<RegisterAnswer> {
    return read(
      RegisterAnswer,
      await this.#send('POST', this.#url(head, ROUTES.register), body),
      'register answer',
    )
  }

  async heartbeat(head: string, nodeId: string, stats: z.input<typeof Heartbeat>): Promise<HeartbeatAnswer> {
    const answer = await this.#send('POST', this.#url(head, ROUTES.heartbeat, nodeId), stats)
    return read(HeartbeatAnswer, answer, 'heartbeat answer')
  }

  /** What a node says of an actor living there; undefined if it has none of that id. */
  async actor(at: string, id: string): Promise<ActorInfo | undefined> {
    try {
      return read(ActorState, await this.#send('GET', this.#url(at, ROUTES.actor, id)), 'actor')
    } catch (err) {
      if (err instanceof MagpieError && ERROR_STATUS[err.code] === 404) return undefined
      throw err
    }
  }

  /** Asks the head to run a method call of an actor that lives on another node. */
  async callActor(head: string, call: OutgoingCall): Promise<void> {
    await this.#send('POST', this.#url(head, ROUTES.actorCalls), call)
  }

  /** Tells the head of an actor made on a node inside a function. */
  async actorMade(head: string, body: ActorMade): Promise<void> {
    await this.#send('POST', this.#url(head, ROUTES.actors), body)
  }

  /** The id of a live actor the head knows, by name or id; undefined if there is none. */
  async findActor(head: string, nameOrId: string): Promise<string | undefined> {
    try {
      const answer = (await this.#send('GET', this.#url(head, ROUTES.actorByName, nameOrId))) as {
        id?: unknown
      }
      return typeof answer?.id === 'string' ? answer.id : undefined
    } catch (err) {
      if (err instanceof MagpieError && ERROR_STATUS[err.code] === 404) return undefined
      throw err
    }
  }

  /** Gives the head an actor's latest checkpoint. */
  async actorCheckpoint(head: string, id: string, state: WireArg): Promise<void> {
    await this.#send('POST', this.#url(head, ROUTES.actorCheckpoint, id), { state })
  }

  /** Kills an actor on the node it lives on. */
  async killActor(at: string, id: string): Promise<void> {
    await this.#send('DELETE', this.#url(at, ROUTES.actor, id))
  }

  /** The latest version of every function the head has deployed. */
  async functions(head: string): Promise<FunctionList> {
    return read(FunctionList, await this.#send('GET', this.#url(head, ROUTES.functions)), 'function list')
  }

  /** A version's code, from the head; undefined if the head has no such version. */
  async functionCode(head: string, ref: string): Promise<FunctionCode | undefined> {
    try {
      const answer = await this.#send('GET', this.#url(head, ROUTES.functionCode, ref))
      return read(FunctionCode, answer, 'function code')
    } catch (err) {
      if (err instanceof MagpieError && ERROR_STATUS[err.code] === 404) return undefined
      throw err
    }
  }

  async leave(head: string, nodeId: string, ids: string[]): Promise<void> {
    await this.#send('POST', this.#url(head, ROUTES.leave, nodeId), { ids })
  }

  async report(owner: string, report: SettledReport): Promise<void> {
    await this.#send('POST', this.#url(owner, ROUTES.settled), report)
  }

  /** Places calls on a node; the ids it took (the others it had already). */
  async sendCalls(node: string, calls: OutgoingCall[]): Promise<string[]> {
    return read(TaskAnswer, await this.#send('POST', this.#url(node, ROUTES.tasks), calls), 'task answer')
      .accepted
  }

  async steal(peer: string, body: StealRequest): Promise<StolenCall[]> {
    return read(StealAnswer, await this.#send('POST', this.#url(peer, ROUTES.steal), body), 'steal answer')
      .calls
  }

  async nudge(peer: string, body: Nudge): Promise<void> {
    await this.#send('POST', this.#url(peer, ROUTES.nudge), body)
  }

  async moved(owner: string, body: Moved): Promise<void> {
    await this.#send('POST', this.#url(owner, ROUTES.moved), body)
  }

  /** Cancels a call on the node that has it (or had it, and knows where it went). */
  async cancel(at: string, id: string, how: { force: boolean; recursive: boolean }): Promise<void> {
    await this.#send('POST', this.#url(at, ROUTES.cancel, id), how)
  }

  async release(peer: string, ids: string[]): Promise<void> {
    await this.#send('POST', this.#url(peer, ROUTES.release), { ids })
  }

  /** An object's status at `at` (waiting up to `waitS` while it is unfinished); undefined if it is not there. */
  async meta(at: string, id: string, waitS = 0): Promise<ObjectMeta | undefined> {
    try {
      const answer = await this.#send('GET', this.#url(at, ROUTES.objectMeta, id, `?wait=${waitS}`))
      return read(ObjectMeta, answer, 'object meta')
    } catch (err) {
      if (err instanceof MagpieError && ERROR_STATUS[err.code] === 404) return undefined
      throw err
    }
  }

  /** Stores a value on a node under `id`; the node's refusal (OBJECT_STORE_FULL, say) is thrown. */
  async putObject(
    at: string,
    id: string,
    body: Uint8Array | AsyncIterable<Uint8Array>,
    length: number,
    contentType: string,
    ttlMs: number | undefined,
  ): Promise<void> {
    const response = await request(this.#url(at, ROUTES.object, id, ttlMs ? `?ttlMs=${ttlMs}` : ''), {
      method: 'PUT',
      headers: { ...this.#auth, 'content-type': contentType, 'content-length': String(length) },
      body: body as Uint8Array,
    })
    const text = await response.body.text()
    if (response.statusCode >= 400) throw errorFromBody(parseJson(text), response.statusCode)
  }

  /**
   * What a call wrote at `at` (see ROUTES.logs): the read first, then, with
   * `follow`, each line as it comes, until the call settles there or
   * `signal` aborts.
   */
  async *logs(
    at: string,
    id: string,
    children: boolean,
    follow: boolean,
    signal: AbortSignal,
  ): AsyncGenerator<{ read?: LogsRead; line?: LogLine; end?: true }> {
    const query = `?children=${children ? 1 : 0}&follow=${follow ? 1 : 0}`
    const response = await request(this.#url(at, ROUTES.logs, id, query), { headers: this.#auth, signal })
    if (response.statusCode !== 200) {
      const text = await response.body.text()
      throw errorFromBody(parseJson(text), response.statusCode)
    }
    let rest = ''
    response.body.setEncoding('utf8')
    try {
      for await (const chunk of response.body) {
        const lines = (rest + chunk).split('\n')
        rest = lines.pop() ?? ''
        for (const line of lines) if (line !== '') yield JSON.parse(line)
      }
    } catch (err) {
      if (!signal.aborted) throw err
    }
  }

  /** A node's biggest objects, with what holds them. */
  async biggestObjects(at: string, limit: number): Promise<HeldObject[]> {
    const answer = await this.#send('GET', this.#url(at, ROUTES.biggestObjects, '', `?limit=${limit}`))
    return read(HeldObjects, answer, 'biggest objects')
  }

  /** The calls a node saw lately, as `filter` asks. */
  async recentTasks(at: string, filter: TaskFilter): Promise<TaskRecord[]> {
    const answer = await this.#send('GET', this.#url(at, ROUTES.recentTasks, '', taskFilterQuery(filter)))
    return read(RecentTasks, answer, 'recent tasks') as TaskRecord[]
  }

  async deleteObject(at: string, id: string): Promise<void> {
    await this.#send('DELETE', this.#url(at, ROUTES.object, id))
  }

  /**
   * A ready object's value at `at`, as a stream with its headers, for passing
   * it on without holding it whole; undefined if it is not ready there.
   */
  async streamObject(
    at: string,
    id: string,
  ): Promise<{ headers: Record<string, string>; body: Readable } | undefined> {
    const response = await request(this.#url(at, ROUTES.object, id, '?seen=1'), { headers: this.#auth })
    if (response.statusCode !== 200) {
      await response.body.dump()
      return undefined
    }
    const headers: Record<string, string> = {}
    for (const name of ['content-type', 'content-length']) {
      const value = response.headers[name]
      if (typeof value === 'string') headers[name] = value
    }
    return { headers, body: response.body }
  }

  /**
   * Reads an object from the process at `from`, waiting while it is
   * unfinished and following it where it moved (a stolen call's result is
   * with the thief); `forClient`: a client reads it, so it keeps its TTL there.
   * Bytes land in shared memory straight from the socket.
   */
  async readObject(id: string, from: string, forClient = false): Promise<EncodedValue> {
    let at = from
    const graceUntil = Date.now() + UNKNOWN_GRACE_MS
    for (;;) {
      const query = `?wait=60${forClient ? '&seen=1' : ''}`
      const { status, headers, body } = await rawGet(
        this.#url(at, ROUTES.object, id, query),
        this.#auth,
        BYTES_TYPE,
      )
      if (status === 202) continue
      if (status === 404 && Date.now() < graceUntil) {
        await new Promise((resolve) => setTimeout(resolve, 20))
        continue
      }
      if (status === 307 && headers.location) {
        at = new URL(headers.location, at).origin
        continue
      }
      const text = () => Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString()
      if (status >= 400) throw errorFromBody(parseJson(text()), status)
      if ((headers['content-type'] ?? '').startsWith(BYTES_TYPE))
        return { kind: 'bytes', bytes: toShared(body) }
      return { kind: 'json', text: text() }
    }
  }

  /** The URL at `base` where an object is read: where a node sends readers of a call that moved. */
  objectUrl(base: string, id: string, query: string): string {
    return this.#url(base, ROUTES.object, id, query)
  }
}
