/**
 * deref(holder): the value behind the ref in `{"ref": {"$ref": id}}`, read
 * with `get` wherever it is in the cluster: the inverse of hold.
 */
import { get, type ObjectRef } from 'magpie'

export default async function deref<T>(holder: { ref: ObjectRef<T> }): Promise<T> {
  return get(holder.ref)
}
