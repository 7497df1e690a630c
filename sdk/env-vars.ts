/** A variable of the environment, where the runtime has one and lets it be read (Deno asks first). */
export function fromEnv(name: string): string | undefined {
  try {
    const value = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[
      name
    ]
    return value === '' ? undefined : value
  } catch {
    return undefined
  }
}
