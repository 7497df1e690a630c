import { readFileSync } from 'node:fs'
import { Agent, request } from 'undici'
import { startPlatformProcess } from './bench/lib/platform-process.ts'

const size = Number(process.argv[2])
const count = Number(process.argv[3])
const p = await startPlatformProcess(['--object-store-memory', '64MiB'])
const pid = p.child.pid as number
const mem = () => {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8')
  return `rss ${Number(s.match(/VmRSS:\s+(\d+)/)?.[1]) >> 10} MiB peak ${Number(s.match(/VmHWM:\s+(\d+)/)?.[1]) >> 10} MiB`
}
const agent = new Agent({ connections: 16 })
const body = Buffer.alloc(size, 7)
let next = 0
const t0 = performance.now()
await Promise.all(
  Array.from({ length: 16 }, async () => {
    while (next < count) {
      const i = next++
      const r = await request(`${p.url}/v1/objects`, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body,
        dispatcher: agent,
      })
      await r.body.text()
      if (r.statusCode !== 201) throw new Error(String(r.statusCode))
      if (i % 32768 === 0) console.log(i, mem())
    }
  }),
)
console.log('done', count, 'puts in', ((performance.now() - t0) / 1000).toFixed(1), 's', mem())
const nodes = (await (await fetch(`${p.url}/v1/nodes`)).json()) as any[]
console.log(JSON.stringify(nodes[0].objects))
await p.stop()
