/**
 * Calls this node owns that run on other nodes: stolen from here, perhaps
 * stolen on from there. For each, the node it runs on, so that the call is
 * settled by the rules of node death (DESIGN.md): when that node dies, or
 * its result is lost on the way, the call runs here again (up to
 * maxRetries), and whatever waits for it here wakes up.
 */
import type { LocalNode } from '../../node/node.ts'
import type { Task } from '../../node/task.ts'

export class Delegations {
  readonly #node: LocalNode
  readonly #calls = new Map<string, { task: Task; thief: string }>()
  /** Nodes the head has taken for dead. */
  readonly #dead = new Set<string>()

  constructor(node: LocalNode) {
    this.#node = node
  }

  /** A call of this node's was stolen by `thief`. */
  gave(task: Task, thief: string): void {
    this.#calls.set(task.id, { task, thief })
    if (this.#dead.has(thief)) this.lost(task.id, `node ${thief} died while running it`)
  }

  /** A call of this node's moved on, from the node that stole it to `thief`. */
  moved(id: string, thief: string): void {
    const call = this.#calls.get(id)
    if (!call) return
    call.thief = thief
    if (this.#dead.has(thief)) this.lost(id, `node ${thief} died while running it`)
  }

  /** Its result is here: nothing more to watch. */
  settled(id: string): void {
    this.#calls.delete(id)
  }

  /** The node a call of this node's runs on now, if it was given away. */
  thiefOf(id: string): string | undefined {
    return this.#calls.get(id)?.thief
  }

  has(id: string): boolean {
    return this.#calls.has(id)
  }

  /** The run elsewhere is lost: the call runs here again. */
  lost(id: string, why: string): void {
    const call = this.#calls.get(id)
    if (!call) return
    this.#calls.delete(id)
    this.#node.runAgain(call.task, why)
  }

  /** The nodes the head takes for dead now: calls on those that newly died run here again. */
  dead(ids: readonly string[]): void {
    const newly = ids.filter((id) => !this.#dead.has(id))
    this.#dead.clear()
    for (const id of ids) this.#dead.add(id)
    if (newly.length === 0) return
    const gone = new Set(newly)
    for (const [id, call] of this.#calls) {
      if (gone.has(call.thief)) this.lost(id, `node ${call.thief} died while running it`)
    }
  }
}
