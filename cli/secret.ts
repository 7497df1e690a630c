/** `magpie secret set NAME` (the value from stdin), `magpie secret list` (names only), `magpie secret rm NAME`. */

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  // A value typed or echoed ends with a newline that is not part of it.
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '')
}

async function send(url: string, token: string | undefined, method: string, path: string, body?: string) {
  const response = await fetch(`${url.replace(/\/+$/, '')}/v1/secrets${path}`, {
    method,
    headers: { 'content-type': 'text/plain', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body === undefined ? {} : { body }),
  })
  if (!response.ok) {
    const answer = (await response.json().catch(() => ({}))) as { error?: { code: string; message: string } }
    throw new Error(
      answer.error ? `${answer.error.code}: ${answer.error.message}` : `HTTP ${response.status}`,
    )
  }
  return response
}

export async function runSecret(url: string, token: string | undefined, args: string[]): Promise<number> {
  const [action, name] = args
  switch (action) {
    case 'set': {
      if (!name) throw new Error('usage: magpie secret set NAME < value')
      if (process.stdin.isTTY) console.error(`value of ${name} (then Ctrl-D):`)
      const response = await send(url, token, 'PUT', `/${encodeURIComponent(name)}`, await readStdin())
      console.log(`${name} ${response.status === 201 ? 'set' : 'updated'}`)
      return 0
    }
    case 'list': {
      const response = await send(url, token, 'GET', '')
      for (const s of (await response.json()) as Array<{ name: string; updatedAt: string }>) {
        console.log(`${s.name}  ${s.updatedAt}`)
      }
      return 0
    }
    case 'rm': {
      if (!name) throw new Error('usage: magpie secret rm NAME')
      await send(url, token, 'DELETE', `/${encodeURIComponent(name)}`)
      console.log(`${name} removed`)
      return 0
    }
    default:
      throw new Error('usage: magpie secret set NAME < value | magpie secret list | magpie secret rm NAME')
  }
}
