/**
 * The HTTP transport of the SDK. In Node it uses undici's `request` on a
 * keep-alive pool (several times cheaper per call than `fetch`, which matters
 * when a driver makes thousands of calls on the same cores as the workers);
 * everywhere else, and when a custom fetch is given, it uses `fetch`.
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

/** What the client reads of an answer. */
export interface Reply {
  status: number
  header(name: string): string | null
  text(): Promise<string>
  bytes(): Promise<Uint8Array>
  /** Reads and drops the body, so that the connection can be reused. */
  discard(): Promise<void>
  /** The body as text chunks, as they arrive. */
  chunks(): AsyncIterable<string>
}

export type Body = string | Uint8Array

type Sender = (method: string, url: string, headers: Record<string, string>, body?: Body) => Promise<Reply>

interface Backend {
  send: Sender
  close(): Promise<void>
}

/** Whether undici may be there (a runtime that says it is Node: Node, and Bun, which says so too). */
const maybeNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string'

/**
 * undici's pooled `Agent.request` where the runtime has it (Node), else
 * fetch: chosen by what the runtime can do, not by its name (Bun says it is
 * Node, and its undici has no `Agent.request`).
 */
async function nodeBackend(connections: number): Promise<Backend> {
  let undici: typeof import('undici') | undefined
  try {
    undici = await import('undici')
  } catch {
    // No undici here: fetch does.
  }
  if (typeof undici?.Agent?.prototype?.request !== 'function') {
    return fetchBackend(globalThis.fetch.bind(globalThis))
  }
  const agent = new undici.Agent({ connections, keepAliveTimeout: 30_000 })
  return {
    async send(method, url, headers, body) {
      const {
        statusCode,
        headers: h,
        body: stream,
      } = await agent.request({
        origin: new URL(url).origin,
        path: url.slice(url.indexOf('/', url.indexOf('//') + 2)),
        method: method as 'GET',
        headers,
        ...(body === undefined ? {} : { body }),
      })
      return {
        status: statusCode,
        header: (name) => {
          const v = h[name.toLowerCase()]
          return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v
        },
        text: () => stream.text(),
        bytes: async () => new Uint8Array(await stream.arrayBuffer()),
        discard: async () => {
          await stream.dump()
        },
        chunks: () => {
          stream.setEncoding('utf8')
          return stream as AsyncIterable<string>
        },
      }
    },
    close: () => agent.close(),
  }
}

function fetchBackend(fetch: FetchLike): Backend {
  return {
    async send(method, url, headers, body) {
      const init: RequestInit = { method, headers }
      if (body !== undefined) init.body = body as BodyInit
      const response = await fetch(url, init)
      return {
        status: response.status,
        header: (name) => response.headers.get(name),
        text: () => response.text(),
        bytes: async () => new Uint8Array(await response.arrayBuffer()),
        discard: async () => {
          await response.body?.cancel()
        },
        chunks: () => textChunks(response),
      }
    },
    close: async () => {},
  }
}

/** Sends requests to one gateway, turning error bodies into magpie errors. */
export class Transport {
  readonly baseUrl: string
  readonly #headers: Record<string, string>
  readonly #backend: Promise<Backend>

  constructor(baseUrl: string, options: TransportOptions = {}) {
    if (!/^https?:\/\//.test(baseUrl))
      throw new TypeError(`url must start with http:// or https://: ${baseUrl}`)
    const connections = options.connections ?? 128
    if (!Number.isInteger(connections) || connections < 1) {
      throw new TypeError('options.connections must be a positive integer')
    }
    this.baseUrl = baseUrl.replace(/\/+$/, '')
    this.#headers = options.token ? { authorization: `Bearer ${options.token}` } : {}
    this.#backend = options.fetch
      ? Promise.resolve(fetchBackend(options.fetch))
      : maybeNode
        ? nodeBackend(connections)
        : Promise.resolve(fetchBackend(globalThis.fetch.bind(globalThis)))
    this.#backend.catch(() => {})
  }

  /** Sends one request; any status of 400 or above throws the error the body names. */
  async send(
    method: string,
    path: string,
    body?: Body,
    headers: Record<string, string> = {},
  ): Promise<Reply> {
    const backend = await this.#backend
    let reply: Reply
    try {
      reply = await backend.send(method, this.baseUrl + path, { ...this.#headers, ...headers }, body)
    } catch (cause) {
      throw new MagpieError(`cannot reach ${this.baseUrl}: ${(cause as Error).message}`)
    }
    if (reply.status >= 400) throw errorFromBody(await readJson(reply), reply.status)
    return reply
  }

  /** Sends JSON and reads JSON back. */
  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const reply = await this.send(
      method,
      path,
      body === undefined ? undefined : JSON.stringify(body),
      body === undefined ? {} : { 'content-type': 'application/json' },
    )
    return JSON.parse(await reply.text()) as T
  }

  async close(): Promise<void> {
    await (await this.#backend).close()
  }
}

async function* textChunks(response: Response): AsyncIterable<string> {
  if (!response.body) return
  const decoder = new TextDecoder()
  const reader = response.body.getReader()
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    yield decoder.decode(read.value, { stream: true })
  }
}

/** Splits a stream of text chunks into lines. */
export async function* lines(chunks: AsyncIterable<string>): AsyncIterable<string> {
  let rest = ''
  for await (const chunk of chunks) {
    rest += chunk
    let at = rest.indexOf('\n')
    while (at >= 0) {
      yield rest.slice(0, at)
      rest = rest.slice(at + 1)
      at = rest.indexOf('\n')
    }
  }
  if (rest.length > 0) yield rest
}

async function readJson(reply: Reply): Promise<unknown> {
  try {
    return JSON.parse(await reply.text())
  } catch {
    return undefined
  }
}
