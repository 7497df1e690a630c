/**
 * Backpressure for calls made inside functions: they are never refused (a
 * parent would wait forever for a child that was not queued); instead the
 * thread that makes one waits while its node is full, until calls finish.
 *
 * The node's main thread and its worker threads share a little memory: the
 * room the node has (calls it may still take), and, per thread, the nested
 * calls it made that the node has not taken in yet. Before each nested call
 * a thread checks that the room exceeds what is on its way, at the cost of
 * a few atomic reads; if not, it sends what it has and waits to be woken.
 *
 * No deadlock: at most all threads but one wait at a time, so one is always
 * free to run the queued calls whose end makes room.
 */

/** The cells of the shared memory: the room, the threads waiting, a wake counter, then one per thread. */
const ROOM = 0
const WAITING = 1
const WAKES = 2
const UNSEEN = 3

const INT32_MAX = 2 ** 31 - 1

/** How long a waiting thread sleeps between looks at the room, in ms (a wake may come sooner). */
const LOOK_EVERY_MS = 100

/** The node's side: tells its threads its room. */
export class RoomSignal {
  readonly cells: Int32Array

  /** `threads`: one per CPU; the sized threads (see worker-pool.ts) share one more cell. */
  constructor(threads: number) {
    this.cells = new Int32Array(new SharedArrayBuffer((UNSEEN + threads + 1) * Int32Array.BYTES_PER_ELEMENT))
    Atomics.store(this.cells, ROOM, INT32_MAX)
  }

  /** The node has `room` now, having taken in `seen` nested calls of `thread`; waiting threads wake if it grew. */
  update(room: number, thread: number, seen: number): void {
    if (seen > 0) Atomics.sub(this.cells, UNSEEN + thread, seen)
    const now = Math.max(0, Math.min(INT32_MAX, room))
    const before = Atomics.exchange(this.cells, ROOM, now)
    if (now > before && Atomics.load(this.cells, WAITING) > 0) {
      Atomics.add(this.cells, WAKES, 1)
      Atomics.notify(this.cells, WAKES)
    }
  }

  /** A thread died: what it had on its way died with it. */
  reset(thread: number): void {
    Atomics.store(this.cells, UNSEEN + thread, 0)
  }
}

function onTheirWay(cells: Int32Array, threads: number): number {
  let sum = 0
  for (let i = 0; i <= threads; i++) sum += Atomics.load(cells, UNSEEN + i)
  return sum
}

/**
 * A thread's side, before it makes a nested call: returns at once while the
 * node has room; else first `beforeWait` (to send what the thread made so
 * far), then waits until it has room, unless every other of the `threads`
 * waits already. The call is then counted as on its way.
 */
export function waitForRoom(cells: Int32Array, threads: number, self: number, beforeWait: () => void): void {
  if (Atomics.load(cells, ROOM) <= onTheirWay(cells, threads)) {
    beforeWait()
    while (Atomics.load(cells, ROOM) <= onTheirWay(cells, threads)) {
      if (Atomics.add(cells, WAITING, 1) >= threads - 1) {
        Atomics.sub(cells, WAITING, 1)
        break
      }
      Atomics.wait(cells, WAKES, Atomics.load(cells, WAKES), LOOK_EVERY_MS)
      Atomics.sub(cells, WAITING, 1)
    }
  }
  Atomics.add(cells, UNSEEN + Math.min(self, threads), 1)
}
