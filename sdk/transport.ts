/**
 * The HTTP transport of the SDK: `fetch` everywhere, and in Node undici's
 * fetch with a keep-alive pool, loaded lazily so that browsers never see it.
 */
import { errorFromBody, MagpieError } from './errors.ts'

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>

export interface TransportOptions {
  /** Bearer token sent with every call. */
  token?: string | undefined
  /** A fetch to use instead of the runtime's (tests, proxies, custom agents). */
  fetch?: FetchLike | undefined
  /** Most connections kept open to the gateway, in Node (default 128). */
  connections?: number | undefined
}

const isNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string'

async function nodeFetch(connections: number): Promise<{ fetch: FetchLike; close: () => Promise<void> }> {
  const undici = await import('undici')
  const agent = new undici.Agent({ connections, keepAliveTimeout: 30_000, pipelining: 1 })
  const fetch = ((input: string, init?: RequestInit) =>
    undici.fetch(input, { ...(init as object), dispatcher: agent } as never)) as unknown as FetchLike
  return { fetch, close: () => agent.close() }
}

/** Sends requests to one gateway, turning error bodies into magpie errors. */
export class Transport {
  readonly baseUrl: string
  readonly #headers: Record<string, string>
  readonly #ready: Promise<{ fetch: FetchLike; close: () => Promise<void> }>

  constructor(baseUrl: string, options: TransportOptions = {}) {
    if (!/^https?:\/\//.test(baseUrl))
      throw new TypeError(`url must start with http:// or https://: ${baseUrl}`)
    const connections = options.connections ?? 128
    if (!Number.isInteger(connections) || connections < 1) {
      throw new TypeError('options.connections must be a positive integer')
    }
    this.baseUrl = baseUrl.replace(/\/+$/, '')
    this.#headers = options.token ? { authorization: `Bearer ${options.token}` } : {}
    const custom = options.fetch
    this.#ready = custom
      ? Promise.resolve({ fetch: custom, close: async () => {} })
      : isNode
        ? nodeFetch(connections)
        : Promise.resolve({ fetch: globalThis.fetch.bind(globalThis), close: async () => {} })
  }

  /** Sends one request; any status of 400 or above throws the error the body names. */
  async send(
    method: string,
    path: string,
    body?: BodyInit,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const { fetch } = await this.#ready
    const init: RequestInit = { method, headers: { ...this.#headers, ...headers } }
    if (body !== undefined) init.body = body
    let response: Response
    try {
      response = await fetch(this.baseUrl + path, init)
    } catch (cause) {
      const err = new MagpieError(`cannot reach ${this.baseUrl}: ${(cause as Error).message}`)
      throw err
    }
    if (response.status >= 400) throw errorFromBody(await readJson(response), response.status)
    return response
  }

  /** Sends JSON and reads JSON back. */
  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.send(
      method,
      path,
      body === undefined ? undefined : JSON.stringify(body),
      body === undefined ? {} : { 'content-type': 'application/json' },
    )
    return (await response.json()) as T
  }

  async close(): Promise<void> {
    await (await this.#ready).close()
  }
}

async function readJson(response: Response): Promise<unknown> {
  try {
    return await response.json()
  } catch {
    return undefined
  }
}
