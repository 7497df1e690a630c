/**
 * magpie's public surface: the client (`connect`), the in-function API
 * (`remote`, `get`, `put`, `wait`), object refs and the error classes.
 */
export type { ActorClass, ActorHandle, ActorMethods, ActorOptions, AnyClass, RemoteMethod } from './actors.ts'
export { isActorHandle } from './actors.ts'
export type { ConnectOptions, Settled } from './client.ts'
export { Client } from './client.ts'
export type { EncodedValue } from './codec.ts'
export { isObjectId, ObjectRef } from './codec.ts'
export { connect } from './connect.ts'
export type { ErrorCode, RemoteErrorInfo, SerializedError } from './errors.ts'
export {
  ActorDiedError,
  BadRequestError,
  ERROR_STATUS,
  FunctionNotFoundError,
  FunctionTimeoutError,
  GetTimeoutError,
  LogsGoneError,
  MagpieError,
  NotFoundError,
  ObjectLostError,
  ObjectNotFoundError,
  ObjectStoreFullError,
  PayloadTooLargeError,
  QueueFullError,
  TaskCancelledError,
  TaskError,
  WorkerCrashedError,
} from './errors.ts'
export type { FunctionModule, LocalOptions } from './local.ts'
export { LocalClient } from './local-client.ts'
export type { ProgressOptions, ProgressSink } from './progress.ts'
export { ProgressBar } from './progress.ts'
export type { FunctionRuntime } from './runtime.ts'
export { actor, cancel, env, get, getActor, put, remote, signal, wait } from './runtime.ts'
export type {
  AnyFunction,
  CallOptions,
  CancelOptions,
  GetOptions,
  RemoteArgs,
  RemoteFunction,
  RemoteResult,
  WaitOptions,
  WaitResult,
} from './types.ts'
