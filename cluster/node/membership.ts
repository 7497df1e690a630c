/**
 * A node's membership of its cluster: it registers with the head, trying
 * again with capped exponential backoff and jitter until the head answers
 * (so nodes may start before their head), heartbeats its load, and
 * registers again, under the same id, whenever the head no longer knows it
 * (the head restarted, or took it for dead). The head's answers tell it its
 * peers. Trouble is said on stderr now and then, not on every try.
 */
import { connect } from 'node:net'
import type { NodeStats } from '../../node/node.ts'
import { backoffDelay } from '../../sdk/backoff.ts'
import { ERROR_STATUS, MagpieError } from '../../sdk/errors.ts'
import type { InternalClient } from '../client.ts'
import { throttledWarn } from '../log.ts'
import { isReachableUrl, type Peer } from '../protocol.ts'

export const HEARTBEAT_MS = 500
/** Longest wait between tries to reach the head. */
const RETRY_MAX_MS = 2000
/** How often trouble reaching the head is said. */
const SAY_EVERY_MS = 10_000

export interface MembershipOptions {
  head: string
  client: InternalClient
  /** The id this node wants (kept when it registers again). */
  id: string
  cpus: number
  resources: Record<string, number>
  /** The URL peers and the head use; undefined: found toward the head (see advertisedUrl). */
  advertiseUrl: string | undefined
  /** Where this node listens. */
  listening: { host: string; port: number }
  stats(): NodeStats
  /** The revision of the head's functions, as each answer tells it. */
  functions(revision: number): void
  /** The head's latest word on the others: the live peers, and the nodes it has taken for dead. */
  peers(peers: Peer[], dead: string[]): void
}

/** The local address this host uses to reach `url`: the one its peers can reach it on too. */
function localAddressToward(url: string): Promise<string> {
  const { hostname, port, protocol } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: hostname.replace(/^\[|\]$/g, ''),
      port: Number(port || (protocol === 'https:' ? 443 : 80)),
    })
    socket.once('connect', () => {
      const address = (socket.localAddress ?? '').replace(/^::ffff:/, '')
      socket.destroy()
      resolve(address)
    })
    socket.once('error', reject)
  })
}

/**
 * The URL this node gives others: `--advertise-url` if set; else where it
 * listens, unless that is an unspecified address (0.0.0.0, ::), which no peer
 * can dial: then the address of the interface that reaches the head.
 */
export async function advertisedUrl(
  options: Pick<MembershipOptions, 'advertiseUrl' | 'listening' | 'head'>,
): Promise<string> {
  if (options.advertiseUrl !== undefined) return options.advertiseUrl.replace(/\/+$/, '')
  const { host, port } = options.listening
  const url = (h: string) => `http://${h.includes(':') ? `[${h}]` : h}:${port}`
  if (isReachableUrl(url(host))) return url(host)
  return url(await localAddressToward(options.head))
}

export class Membership {
  readonly #options: MembershipOptions
  readonly #say = throttledWarn(SAY_EVERY_MS)
  #address = ''
  #registered = false
  #stopped = false
  #timer: ReturnType<typeof setTimeout> | undefined
  #wake: (() => void) | undefined
  #joined: Promise<void>
  #beating = false

  constructor(options: MembershipOptions) {
    this.#options = options
    this.#joined = this.#register()
  }

  /** Resolves once the head has taken this node in (first time). */
  get joined(): Promise<void> {
    return this.#joined
  }

  get registered(): boolean {
    return this.#registered
  }

  get id(): string {
    return this.#options.id
  }

  /** The URL others reach this node on (known once it has joined). */
  get address(): string {
    return this.#address
  }

  /** Registers, trying until the head answers; then heartbeats. */
  async #register(): Promise<void> {
    const { client, head } = this.#options
    for (let attempt = 0; !this.#stopped; attempt++) {
      try {
        this.#address = await advertisedUrl(this.#options)
        const answer = await client.register(head, {
          id: this.#options.id,
          address: this.#address,
          cpus: this.#options.cpus,
          resources: this.#options.resources,
        })
        if (answer.id !== this.#options.id) this.#options.id = answer.id
        this.#registered = true
        this.#options.functions(answer.functions)
        this.#options.peers(answer.peers, [])
        this.#schedule()
        return
      } catch (err) {
        if (err instanceof MagpieError && ERROR_STATUS[err.code] < 500 && err.code !== 'NOT_FOUND') throw err
        this.#say(`waiting for the head at ${head}`, { tries: attempt + 1, cause: err })
        await this.#sleep(backoffDelay(attempt, { baseMs: 100, maxMs: RETRY_MAX_MS }))
      }
    }
  }

  /** Waits `ms`, or less if the membership stops meanwhile. */
  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.#wake = resolve
      this.#timer = setTimeout(resolve, ms)
    })
  }

  #schedule(): void {
    if (this.#stopped) return
    this.#timer = setTimeout(() => this.#beat(), HEARTBEAT_MS)
  }

  async #beat(): Promise<void> {
    if (this.#beating || this.#stopped) return
    this.#beating = true
    const { client, head } = this.#options
    try {
      const answer = await client.heartbeat(head, this.#options.id, this.#options.stats())
      this.#options.functions(answer.functions)
      this.#options.peers(answer.peers, answer.dead)
    } catch (err) {
      if (err instanceof MagpieError && err.code === 'NOT_FOUND') {
        // The head does not know this node (it restarted, or took it for dead): join again.
        this.#registered = false
        this.#say(`the head at ${head} no longer knows this node: joining again`)
        this.#beating = false
        await this.#register().catch((e: unknown) => this.#say('joining again failed', { cause: e }))
        return
      }
      this.#say(`the head at ${head} does not answer heartbeats`, { cause: err })
    }
    this.#beating = false
    this.#schedule()
  }

  /** Stops heartbeats, and tries to register if it has not joined yet. */
  stop(): void {
    this.#stopped = true
    clearTimeout(this.#timer)
    this.#wake?.()
  }
}
