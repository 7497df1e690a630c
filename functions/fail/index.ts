/** fail(message): always throws a CustomError, to show how errors travel. */
class CustomError extends Error {
  override name = 'CustomError'
}

export default function fail(message: string): never {
  throw new CustomError(message)
}
