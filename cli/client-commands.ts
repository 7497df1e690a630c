/** The CLI commands that talk to a running gateway through the SDK. */

import { ObjectRef } from '../sdk/codec.ts'
import { connect } from '../sdk/connect.ts'

function print(value: unknown): void {
  if (value instanceof Uint8Array) process.stdout.write(value)
  else console.log(JSON.stringify(value, null, 2))
}

export async function runInvoke(url: string, token: string | undefined, args: string[], async: boolean) {
  const [name, json] = args
  if (!name) throw new Error('usage: magpie invoke NAME [JSON] [--async]')
  let callArgs: unknown = []
  if (json !== undefined) {
    try {
      callArgs = JSON.parse(json)
    } catch {
      throw new Error(`the arguments are not JSON: ${json}`)
    }
  }
  if (!Array.isArray(callArgs)) callArgs = [callArgs]
  const mp = connect(url, { token })
  try {
    const ref = mp.remote(name).remote(...(callArgs as unknown[]))
    if (async) {
      await mp.wait([ref], { numReturns: 0 })
      console.log(ref.id)
    } else {
      print(await mp.get(ref))
    }
  } finally {
    await mp.close()
  }
  return 0
}

export async function runGet(url: string, token: string | undefined, args: string[]) {
  const [id] = args
  if (!id) throw new Error('usage: magpie get ID')
  const mp = connect(url, { token })
  try {
    print(await mp.get(new ObjectRef(id)))
  } finally {
    await mp.close()
  }
  return 0
}

/** `magpie logs ID [-f] [--children] [--timestamps]`: what a call wrote, as its lines come with -f. */
export async function runLogs(
  url: string,
  token: string | undefined,
  args: string[],
  options: { follow: boolean; children: boolean; timestamps: boolean },
) {
  const [id] = args
  if (!id) throw new Error('usage: magpie logs ID [-f] [--children] [--timestamps]')
  const mp = connect(url, { token })
  try {
    for await (const line of mp.logs(new ObjectRef(id), options)) process.stdout.write(`${line}\n`)
  } finally {
    await mp.close()
  }
  return 0
}
