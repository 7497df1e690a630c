import { describe, expect, it } from 'vitest'
import {
  CallBatch,
  fromWireArg,
  isReachableUrl,
  ownerOf,
  RegisterRequest,
  read,
  SettledReport,
  toWireArg,
} from '../../cluster/protocol.ts'
import { BadRequestError } from '../../sdk/errors.ts'

describe('the cluster protocol', () => {
  it('checks a body at the edge, naming the field that is wrong', () => {
    expect(() => read(RegisterRequest, { address: 'http://0.0.0.0:7000', cpus: 1 }, 'register')).toThrow(
      /register\.address: .*reachable host/,
    )
    expect(() => read(RegisterRequest, { address: 'http://10.0.0.2:7000', cpus: 0 }, 'register')).toThrow(
      BadRequestError,
    )
    expect(read(RegisterRequest, { address: 'http://10.0.0.2:7000', cpus: 2 }, 'register')).toEqual({
      address: 'http://10.0.0.2:7000',
      cpus: 2,
      resources: {},
    })
  })

  it('checks calls: ids, arguments and options', () => {
    const good = {
      id: 'abcdefghijklmnop',
      fn: 'square',
      args: [{ kind: 'json', text: '3' }],
      options: { maxRetries: 1 },
    }
    expect(read(CallBatch, [good], 'calls')).toEqual([{ ...good, epoch: 0 }])
    expect(() => read(CallBatch, [{ ...good, id: 'short' }], 'calls')).toThrow(/calls\.0\.id/)
    expect(() => read(CallBatch, [{ ...good, args: [{ kind: 'file', path: '/etc' }] }], 'calls')).toThrow(
      BadRequestError,
    )
    expect(() => read(CallBatch, [{ ...good, options: { maxRetries: -1 } }], 'calls')).toThrow(/maxRetries/)
  })

  it('takes only known error codes in reports', () => {
    const report = (code: string) => ({
      node: 'nAbc123',
      address: 'http://10.0.0.2:7000',
      objects: [
        {
          id: 'abcdefghijklmnop',
          status: 'failed',
          size: 0,
          contentType: null,
          attempts: 1,
          error: { code, message: 'x' },
        },
      ],
    })
    expect(read(SettledReport, report('FUNCTION_ERROR'), 'report').objects[0]?.error?.code).toBe(
      'FUNCTION_ERROR',
    )
    expect(() => read(SettledReport, report('MADE_UP'), 'report')).toThrow(BadRequestError)
  })

  it('carries bytes as base64 and back, into shared memory', () => {
    const bytes = new Uint8Array([0, 1, 254, 255])
    const wire = toWireArg({ kind: 'bytes', bytes })
    expect(wire).toEqual({ kind: 'base64', data: 'AAH+/w==' })
    const back = fromWireArg(wire)
    expect(back.kind === 'bytes' && [...back.bytes]).toEqual([0, 1, 254, 255])
    expect(back.kind === 'bytes' && back.bytes.buffer instanceof SharedArrayBuffer).toBe(true)
  })

  it('knows reachable URLs and the node an object id names', () => {
    expect(isReachableUrl('http://10.1.2.3:80')).toBe(true)
    expect(isReachableUrl('http://0.0.0.0:80')).toBe(false)
    expect(isReachableUrl('http://[::]:80')).toBe(false)
    expect(isReachableUrl('ftp://host:80')).toBe(false)
    expect(ownerOf('nAbc123_xyzxyzxyzxyz')).toBe('nAbc123')
    expect(ownerOf('abcdefghijklmnop')).toBeUndefined()
  })
})
