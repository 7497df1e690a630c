/**
 * A cluster whose nodes are separate hosts: each node in its own network
 * namespace with its own address on a bridge, the head on the host. The
 * nodes listen on every interface (0.0.0.0): two say where to reach them
 * with --advertise-url, the third finds the address that reaches its head.
 * Nested work started on one node must spread over all of them, and the
 * answer be right. Needs root and iproute2, as CI has.
 */
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Head, startHead } from '../gateway/head.ts'
import { connect } from '../sdk/index.ts'
import { spawnNode, stopSpawnedAfterAll } from './cluster-helpers.ts'
import { ROOT } from './helpers.ts'

const tag = `mp${process.pid % 100000}`
const bridge = `${tag}b`
const subnet = `10.201.${process.pid % 250}`
const spaces = [1, 2, 3].map((i) => ({
  name: `${tag}n${i}`,
  veth: `${tag}v${i}`,
  address: `${subnet}.${i + 1}`,
}))
const token = 'netns-test-token'
let head: Head
const NODE_PORT = 7411
stopSpawnedAfterAll()

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: 'pipe' })
}

function cleanUp(): void {
  for (const space of spaces) {
    try {
      ip('netns', 'del', space.name)
    } catch {}
  }
  try {
    ip('link', 'del', bridge)
  } catch {}
}

beforeAll(async () => {
  cleanUp()
  ip('link', 'add', bridge, 'type', 'bridge')
  ip('addr', 'add', `${subnet}.1/24`, 'dev', bridge)
  ip('link', 'set', bridge, 'up')
  for (const space of spaces) {
    ip('netns', 'add', space.name)
    ip('link', 'add', space.veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', space.name)
    ip('link', 'set', space.veth, 'master', bridge)
    ip('link', 'set', space.veth, 'up')
    ip('-n', space.name, 'addr', 'add', `${space.address}/24`, 'dev', 'eth0')
    ip('-n', space.name, 'link', 'set', 'eth0', 'up')
    ip('-n', space.name, 'link', 'set', 'lo', 'up')
  }
  head = await startHead({ functionsDir: join(ROOT, 'functions'), host: `${subnet}.1`, port: 0, token })
  await Promise.all(
    spaces.map((space, i) =>
      spawnNode({
        head: head.url,
        secret: head.secret,
        netns: space.name,
        args: [
          '--host',
          '0.0.0.0',
          '--port',
          String(NODE_PORT),
          ...(i < 2 ? ['--advertise-url', `http://${space.address}:${NODE_PORT}`] : []),
        ],
      }),
    ),
  )
}, 60_000)

afterAll(async () => {
  await head?.close()
  cleanUp()
})

describe('nodes on separate hosts', () => {
  it('spreads nested work over every node and gets the right answer', async () => {
    const mp = connect(head.url, { token })
    const report = (await mp.get(mp.remote('seed-pipeline').remote({ scale: 20 }), { timeout: 120 })) as {
      answer_sha: string
    }
    expect(report.answer_sha).toBe('72823fb8cecb1d49')
    // Every node's share shows in its next heartbeat.
    await new Promise((r) => setTimeout(r, 1500))
    const list = (await (
      await fetch(`${head.url}/v1/nodes`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as Array<{ address: string; tasks: Record<string, { finished: number }> }>
    // Each node is known by the address others can dial, never 0.0.0.0.
    expect(list.map((n) => n.address).sort()).toEqual(spaces.map((s) => `http://${s.address}:${NODE_PORT}`))
    for (const node of list) expect(node.tasks['process-sample']?.finished ?? 0).toBeGreaterThan(0)
    await mp.close()
  })
})
