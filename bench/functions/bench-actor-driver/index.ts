/**
 * bench-actor-driver(cls, actors, calls): inside a node, makes `actors`
 * actors of `cls` and calls `add(1)` on each `calls` times, all at once;
 * answers the calls per second, from the first call to the last result.
 */
import { actor, get } from 'magpie'

type Adder = { add: { remote(by: number): import('magpie').ObjectRef<number> } }

export default async function benchActorDriver(cls: string, actors: number, calls: number) {
  const handles = Array.from({ length: actors }, () => actor(cls).remote() as unknown as Adder)
  await get(handles.map((h) => h.add.remote(0)))
  const started = performance.now()
  const refs = handles.flatMap((h) => Array.from({ length: calls }, () => h.add.remote(1)))
  const results = await get(refs)
  const seconds = (performance.now() - started) / 1000
  return { calls: results.length, perSecond: Math.round(results.length / seconds) }
}
