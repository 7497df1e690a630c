/**
 * hold(value): stores `value` on the node that runs the call and returns a
 * ref to it, nested (`{"ref": {"$ref": id}}`), so that it stays a ref: a
 * handle to data that stays where it was made until someone reads it.
 */
import { type ObjectRef, put } from 'magpie'

export default async function hold<T>(value: T): Promise<{ ref: ObjectRef<T> }> {
  return { ref: await put(value) }
}
