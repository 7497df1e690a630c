import { describe, expect, it } from 'vitest'
import {
  deserializeError,
  ERROR_STATUS,
  FunctionNotFoundError,
  GetTimeoutError,
  MagpieError,
  NotFoundError,
  serializeError,
  TaskError,
} from '../../sdk/errors.ts'

describe('errors', () => {
  it('maps every code to a status', () => {
    expect(ERROR_STATUS.FUNCTION_ERROR).toBe(502)
    expect(new FunctionNotFoundError('x').status).toBe(404)
    expect(new GetTimeoutError('x').code).toBe('GET_TIMEOUT')
  })

  it('keeps instanceof along the class chain', () => {
    const err = new FunctionNotFoundError('x')
    expect(err).toBeInstanceOf(NotFoundError)
    expect(err).toBeInstanceOf(MagpieError)
    expect(err).toBeInstanceOf(Error)
    expect(err).not.toBeInstanceOf(TaskError)
  })

  it('recognises errors made by another copy of the module', () => {
    const foreign = Object.create(Error.prototype) as object
    Object.defineProperty(foreign, Symbol.for('magpie.error.kinds'), { value: ['TaskError', 'MagpieError'] })
    expect(foreign).toBeInstanceOf(TaskError)
    expect(foreign).toBeInstanceOf(MagpieError)
    expect({}).not.toBeInstanceOf(MagpieError)
  })

  it('round-trips a thrown error through its plain form', () => {
    class CustomError extends Error {
      override name = 'CustomError'
    }
    const plain = serializeError(new CustomError('boom'))
    expect(plain).toMatchObject({ code: 'FUNCTION_ERROR', name: 'CustomError', message: 'boom' })
    const back = deserializeError(JSON.parse(JSON.stringify(plain)))
    expect(back).toBeInstanceOf(TaskError)
    expect((back as TaskError).remote).toMatchObject({ name: 'CustomError', message: 'boom' })
    expect(serializeError(back)).toMatchObject({
      code: 'FUNCTION_ERROR',
      name: 'CustomError',
      message: 'boom',
    })
  })

  it('turns thrown non-errors into messages', () => {
    expect(serializeError('plain string')).toMatchObject({ message: 'plain string' })
    expect(serializeError({ a: 1 })).toMatchObject({ message: '{"a":1}' })
  })
})
