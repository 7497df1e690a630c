/**
 * `magpie deploy PATH...`: bundles each function folder here, with esbuild
 * (its imports and dependencies inlined), and uploads the bundle to a
 * running platform (`PUT /v1/functions/{name}`, the body one ES module).
 * Prints `name  version  new|unchanged` for each.
 */
import { readdir } from 'node:fs/promises'
import { basename, join, resolve } from 'node:path'
import { bundleFunction, findEntry, stopBundler } from '../gateway/registry/bundle.ts'
import { FUNCTION_NAME } from '../gateway/registry/registry.ts'

/** The function folders a path names: itself if it has an entry, else its subfolders that do. */
export async function functionFolders(path: string): Promise<Array<{ name: string; folder: string }>> {
  const folder = resolve(path)
  if (findEntry(folder)) return [{ name: basename(folder), folder }]
  const entries = await readdir(folder, { withFileTypes: true }).catch(() => {
    throw new Error(`${path} is not a folder`)
  })
  const found = entries
    .filter(
      (e) =>
        e.isDirectory() &&
        e.name !== 'node_modules' &&
        FUNCTION_NAME.test(e.name) &&
        findEntry(join(folder, e.name)),
    )
    .map((e) => ({ name: e.name, folder: join(folder, e.name) }))
  if (found.length === 0)
    throw new Error(`${path} has no index.ts, index.mts, index.js or index.mjs, nor folders that do`)
  return found.sort((a, b) => a.name.localeCompare(b.name))
}

/** Uploads one bundle; the answer's version and whether it was new. */
export async function upload(
  url: string,
  token: string | undefined,
  name: string,
  code: string,
): Promise<{ version: string; created: boolean }> {
  const response = await fetch(`${url.replace(/\/+$/, '')}/v1/functions/${encodeURIComponent(name)}`, {
    method: 'PUT',
    headers: { 'content-type': 'text/javascript', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: code,
  })
  const body = (await response.json().catch(() => ({}))) as {
    version?: string
    created?: boolean
    error?: { code: string; message: string }
  }
  if (!response.ok)
    throw new Error(body.error ? `${body.error.code}: ${body.error.message}` : `HTTP ${response.status}`)
  return { version: body.version as string, created: body.created === true }
}

export async function runDeploy(url: string, token: string | undefined, paths: string[]): Promise<number> {
  if (paths.length === 0) throw new Error('usage: magpie deploy PATH... [--url URL]')
  const folders = (await Promise.all(paths.map(functionFolders))).flat()
  let failed = 0
  try {
    for (const { name, folder } of folders) {
      try {
        const { code } = await bundleFunction(findEntry(folder) as string)
        const { version, created } = await upload(url, token, name, code)
        console.log(`${name}  ${version}  ${created ? 'new' : 'unchanged'}`)
      } catch (err) {
        failed += 1
        console.error(`${name}: ${(err as Error).message}`)
      }
    }
  } finally {
    await stopBundler()
  }
  return failed === 0 ? 0 : 1
}
