/**
 * Garbage collection on demand. Values in shared memory are freed only when
 * the garbage collector finds their last view gone, and V8 runs it by the
 * size of its own heap, which a store of big byte values barely touches: a
 * node that lets go of many of them collects now rather than holding them
 * twice over. Works with or without --expose-gc.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

let gc: (() => void) | undefined

/** Runs a full garbage collection of this thread's heap. */
export function collectGarbage(): void {
  if (!gc) {
    const exposed = (globalThis as { gc?: () => void }).gc
    if (exposed) gc = exposed
    else {
      setFlagsFromString('--expose-gc')
      gc = runInNewContext('gc') as () => void
    }
  }
  gc()
}
