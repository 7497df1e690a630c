/**
 * The wire format shared by the SDK, the gateway and the nodes: object ids,
 * `{"$ref": id}` markers, and values stored encoded (JSON text or raw bytes).
 */
import { nanoid } from 'nanoid'

const ID_PATTERN = /^[A-Za-z0-9_-]{16,64}$/
const kRef = Symbol.for('magpie.ObjectRef')

/** True for a well-formed object id: 16 to 64 characters of `[A-Za-z0-9_-]`. */
export function isObjectId(value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERN.test(value)
}

/** A fresh object id; `prefix` names the owner where one is given. */
export function newObjectId(prefix = ''): string {
  return prefix + nanoid(21)
}

/**
 * A handle to an object that exists or will exist: the result of a call or a put.
 * It serializes as `{"$ref": id}`, so it can be passed inside other arguments.
 * @example
 * const ref = square.remote(4); console.log(ref.id)
 */
export class ObjectRef<T = unknown> {
  readonly id: string
  /**
   * Types only (never set): what `get` returns, so that a ref to a string is
   * not taken where a ref to a number is.
   */
  declare readonly __value?: T

  constructor(id: string) {
    if (!isObjectId(id)) throw new TypeError(`not an object id: ${JSON.stringify(id)}`)
    this.id = id
    Object.defineProperty(this, kRef, { value: true, enumerable: false })
  }

  static [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as { [kRef]?: boolean })[kRef] === true
  }

  toJSON(): { $ref: string } {
    return { $ref: this.id }
  }

  toString(): string {
    return `ObjectRef(${this.id})`
  }
}

/** `ref` if it is an ObjectRef with a well-formed id; TypeError otherwise. */
export function checkRef<T>(ref: ObjectRef<T>): ObjectRef<T> {
  if (!(ref instanceof ObjectRef) || !isObjectId(ref.id)) throw new TypeError('expected an ObjectRef')
  return ref
}

/** The id in a `{"$ref": id}` marker or an ObjectRef, else undefined. */
export function refIdOf(value: unknown): string | undefined {
  if (value instanceof ObjectRef) return value.id
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  const keys = Object.keys(value)
  if (keys.length !== 1 || keys[0] !== '$ref') return undefined
  const id = (value as { $ref: unknown }).$ref
  return typeof id === 'string' ? id : undefined
}

/** JSON.parse reviver that turns `{"$ref": id}` markers into ObjectRefs. */
export function reviveRefs(_key: string, value: unknown): unknown {
  const id = refIdOf(value)
  return id !== undefined && isObjectId(id) ? new ObjectRef(id) : value
}

/** A stored value: JSON text, or raw bytes (kept in shared memory inside a node). */
export type EncodedValue = { kind: 'json'; text: string } | { kind: 'bytes'; bytes: Uint8Array }

/** The header that carries an object id: a call's chosen result id, and the id of a value answered. */
export const ID_HEADER = 'X-Magpie-Object-Id'

export const JSON_TYPE = 'application/json'
export const BYTES_TYPE = 'application/octet-stream'

export function contentTypeOf(value: EncodedValue): string {
  return value.kind === 'json' ? JSON_TYPE : BYTES_TYPE
}

export function sizeOf(value: EncodedValue): number {
  return value.kind === 'json' ? byteLength(value.text) : value.bytes.byteLength
}

const encoder = new TextEncoder()
function byteLength(text: string): number {
  // ASCII fast path: most JSON is ASCII, and then characters are bytes.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: checking for non-ASCII
  return /^[\x00-\x7f]*$/.test(text) ? text.length : encoder.encode(text).byteLength
}

/** Encodes a JS value: bytes stay bytes, anything else becomes JSON (undefined as null). */
export function encodeValue(value: unknown): EncodedValue {
  if (value instanceof Uint8Array) return { kind: 'bytes', bytes: value }
  if (value instanceof ArrayBuffer) return { kind: 'bytes', bytes: new Uint8Array(value) }
  const text = JSON.stringify(value === undefined ? null : value)
  if (text === undefined) throw new TypeError(`cannot encode a ${typeof value} as JSON`)
  return { kind: 'json', text }
}

/**
 * Parses JSON text; `{"$ref"}` markers come back as ObjectRefs (the slower
 * reviver runs only if there may be one), each passed to `onRef` if given.
 */
export function parseWithRefs(text: string, onRef?: (ref: ObjectRef) => void): unknown {
  if (!text.includes('"$ref"')) return JSON.parse(text)
  if (!onRef) return JSON.parse(text, reviveRefs)
  return JSON.parse(text, (key, value) => {
    const revived = reviveRefs(key, value)
    if (revived !== value) onRef(revived as ObjectRef)
    return revived
  })
}

/** Decodes a stored value; `{"$ref"}` markers come back as ObjectRefs. */
export function decodeValue(value: EncodedValue): unknown {
  return value.kind === 'json' ? parseWithRefs(value.text) : value.bytes
}
