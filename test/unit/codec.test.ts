import { describe, expect, it } from 'vitest'
import { decodeValue, encodeValue, isObjectId, newObjectId, ObjectRef, refIdOf } from '../../sdk/codec.ts'

describe('codec', () => {
  it('checks object ids', () => {
    expect(isObjectId(newObjectId())).toBe(true)
    expect(isObjectId('short')).toBe(false)
    expect(isObjectId('x'.repeat(65))).toBe(false)
    expect(isObjectId('has space in it!!')).toBe(false)
  })

  it('finds refs only in exact {"$ref"} markers', () => {
    expect(refIdOf({ $ref: 'abc' })).toBe('abc')
    expect(refIdOf({ $ref: 'abc', other: 1 })).toBeUndefined()
    expect(refIdOf(new ObjectRef('a'.repeat(16)))).toBe('a'.repeat(16))
    expect(refIdOf([{ $ref: 'abc' }])).toBeUndefined()
  })

  it('encodes bytes as bytes and the rest as JSON, reviving nested refs', () => {
    const bytes = new Uint8Array([1, 2])
    expect(encodeValue(bytes)).toEqual({ kind: 'bytes', bytes })
    expect(encodeValue(undefined)).toEqual({ kind: 'json', text: 'null' })
    const ref = new ObjectRef('r'.repeat(16))
    const back = decodeValue(encodeValue({ inner: ref })) as { inner: ObjectRef }
    expect(back.inner).toBeInstanceOf(ObjectRef)
    expect(back.inner.id).toBe(ref.id)
  })

  it('refuses what JSON cannot hold', () => {
    expect(() => encodeValue(() => 1)).toThrow(TypeError)
  })
})
