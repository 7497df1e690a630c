import { describe, expect, it } from 'vitest'
import { Delegations } from '../../cluster/node/delegations.ts'
import type { LocalNode } from '../../node/node.ts'
import { makeTask } from '../../node/task.ts'

function setUp() {
  const ranAgain: Array<[string, string]> = []
  const node = { runAgain: (task: { id: string }, why: string) => ranAgain.push([task.id, why]) }
  const delegations = new Delegations(node as unknown as LocalNode)
  const task = (id: string) =>
    makeTask(
      { id, fn: 'square', args: [], options: {} },
      { ref: 'square@0123456789ab', url: 'file:///x', config: {} },
    )
  return { delegations, ranAgain, task }
}

describe('calls a node gave to others', () => {
  it('run here again when the node they went to dies, once', () => {
    const { delegations, ranAgain, task } = setUp()
    delegations.gave(task('aaaaaaaaaaaaaaaa'), 'nThief1')
    delegations.gave(task('bbbbbbbbbbbbbbbb'), 'nThief2')
    delegations.dead([])
    expect(ranAgain).toEqual([])
    delegations.dead(['nThief1'])
    delegations.dead(['nThief1'])
    expect(ranAgain).toEqual([['aaaaaaaaaaaaaaaa', 'node nThief1 died while running it']])
  })

  it('follow a call that moved on, and forget one whose result came', () => {
    const { delegations, ranAgain, task } = setUp()
    delegations.gave(task('aaaaaaaaaaaaaaaa'), 'nThief1')
    delegations.gave(task('bbbbbbbbbbbbbbbb'), 'nThief1')
    delegations.moved('aaaaaaaaaaaaaaaa', 'nThief2')
    delegations.settled('bbbbbbbbbbbbbbbb')
    delegations.dead(['nThief1'])
    expect(ranAgain).toEqual([])
    delegations.dead(['nThief1', 'nThief2'])
    expect(ranAgain.map(([id]) => id)).toEqual(['aaaaaaaaaaaaaaaa'])
  })

  it('run again at once when they went to a node already dead, or their result was lost', () => {
    const { delegations, ranAgain, task } = setUp()
    delegations.dead(['nGone00'])
    delegations.gave(task('aaaaaaaaaaaaaaaa'), 'nGone00')
    delegations.gave(task('bbbbbbbbbbbbbbbb'), 'nThief1')
    delegations.lost('bbbbbbbbbbbbbbbb', 'lost on the way')
    expect(ranAgain.map(([id]) => id)).toEqual(['aaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbb'])
    expect(delegations.has('bbbbbbbbbbbbbbbb')).toBe(false)
  })
})
