// The SDK from plain JavaScript: node examples/sdk.mjs (with `npm start` running).
import { connect, TaskError } from 'magpie'

const mp = connect(process.env.MAGPIE_URL ?? 'http://127.0.0.1:8080')
const square = mp.remote('square')

const ref = square.remote(42) // an ObjectRef at once; the call is on its way
console.log(await mp.get(ref)) // 1764
console.log(await mp.get([1, 2, 3].map((x) => square.remote(x)))) // [ 1, 4, 9 ]

const { ready, pending } = await mp.wait([mp.remote('sleep').remote(1000), mp.remote('sleep').remote(10)])
console.log(ready.length, pending.length) // 1 1

try {
  await mp.get(mp.remote('fail').remote('boom'))
} catch (err) {
  if (err instanceof TaskError) console.log(err.code, err.remote.name, err.remote.message) // FUNCTION_ERROR CustomError boom
}
await mp.close()
