/**
 * Secrets: values stored on the head under a name (`magpie secret set`),
 * given to the calls of the functions whose `config.secrets` grants them, as
 * `env` from 'magpie'. A value is never answered by any route, nor written
 * to a log, a metric or an error: the routes list names only. They are kept
 * in the head's state (a file of mode 0600, or Redis) when it has one.
 */
import { warn } from '../node/log.ts'
import { BadRequestError, NotFoundError } from '../sdk/errors.ts'
import { VARIABLE_NAME } from '../sdk/types.ts'

/** The largest secret, in bytes. */
export const MAX_SECRET_BYTES = 64 * 1024

export interface SecretInfo {
  name: string
  updatedAt: string
}

/** Where secrets are kept (the head's state), by name. */
export interface SecretKeeper {
  set(name: string, value: string): void
  delete(name: string): void
}

export function checkSecretName(name: string): string {
  if (!VARIABLE_NAME.test(name)) {
    throw new BadRequestError(
      `bad secret name ${JSON.stringify(name.slice(0, 140))}: a letter or _, then letters, digits or _ (at most 128)`,
    )
  }
  return name
}

export class SecretStore {
  readonly #values = new Map<string, { value: string; updatedAt: string }>()
  readonly #keeper: SecretKeeper | undefined
  readonly #listeners = new Set<() => void>()

  constructor(keeper?: SecretKeeper) {
    this.#keeper = keeper
  }

  /** Serves again the secrets a keeper holds (`kept`: by name), without keeping them again. */
  restore(kept: ReadonlyMap<string, string>): void {
    for (const [name, text] of kept) {
      try {
        const { value, updatedAt } = JSON.parse(text) as { value: unknown; updatedAt: unknown }
        if (typeof value === 'string' && typeof updatedAt === 'string' && VARIABLE_NAME.test(name))
          this.#values.set(name, { value, updatedAt })
      } catch {
        warn('a secret kept from an earlier start could not be read, and is dropped', { secret: name })
      }
    }
  }

  /** Sets a secret; true if it is new. */
  set(name: string, value: string): boolean {
    checkSecretName(name)
    if (Buffer.byteLength(value) > MAX_SECRET_BYTES)
      throw new BadRequestError(`a secret holds at most ${MAX_SECRET_BYTES} bytes`)
    const created = !this.#values.has(name)
    const entry = { value, updatedAt: new Date().toISOString() }
    this.#values.set(name, entry)
    this.#keeper?.set(name, JSON.stringify(entry))
    this.#changed()
    return created
  }

  remove(name: string): void {
    if (!this.#values.delete(name)) throw new NotFoundError(`no secret named ${name}`)
    this.#keeper?.delete(name)
    this.#changed()
  }

  /** The names, never the values. */
  list(): SecretInfo[] {
    return [...this.#values]
      .map(([name, { updatedAt }]) => ({ name, updatedAt }))
      .sort((a, b) => a.name.localeCompare(b.name))
  }

  value(name: string): string | undefined {
    return this.#values.get(name)?.value
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  #changed(): void {
    for (const listener of this.#listeners) listener()
  }
}
