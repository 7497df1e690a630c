/**
 * A cluster whose nodes are separate hosts: each node in its own network
 * namespace with its own address on a bridge, the head on the host. Nested
 * work started on one node must spread over all of them, and the answer be
 * right. Needs root and iproute2, as CI has.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Head, startHead } from '../gateway/head.ts'
import { connect } from '../sdk/index.ts'
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
const nodes: ChildProcess[] = []

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
    spaces.map(
      (space) =>
        new Promise<void>((resolve, reject) => {
          const child = spawn(
            'ip',
            [
              'netns',
              'exec',
              space.name,
              process.execPath,
              join(ROOT, 'bin/magpie.mjs'),
              'start',
              '--join',
              head.url,
              '--host',
              space.address,
              '--cpus',
              '1',
            ],
            {
              cwd: ROOT,
              stdio: ['ignore', 'pipe', 'inherit'],
              env: { ...process.env, MAGPIE_CLUSTER_SECRET: head.secret },
            },
          )
          nodes.push(child)
          let out = ''
          child.stdout?.on('data', (chunk: Buffer) => {
            out += chunk
            if (out.includes('joined')) resolve()
          })
          child.once('exit', (code) => reject(new Error(`node in ${space.name} exited with ${code}: ${out}`)))
        }),
    ),
  )
}, 60_000)

afterAll(async () => {
  for (const child of nodes) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
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
    expect(list.map((n) => n.address.split('//')[1]?.split(':')[0]).sort()).toEqual(
      spaces.map((s) => s.address),
    )
    for (const node of list) expect(node.tasks['process-sample']?.finished ?? 0).toBeGreaterThan(0)
    await mp.close()
  })
})
