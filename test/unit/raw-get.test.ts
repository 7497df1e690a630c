import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rawGet } from '../../cluster/raw-get.ts'

const BYTES = 'application/octet-stream'
const big = Buffer.alloc(3 * 1024 * 1024 + 17).map((_, i) => i % 253)
let server: Server
let base = ''

beforeAll(async () => {
  server = createServer((req, res) => {
    expect(req.headers['x-secret']).toBe('s')
    switch (req.url) {
      case '/bytes':
        res.writeHead(200, { 'content-type': BYTES, 'content-length': big.byteLength })
        res.end(big)
        break
      case '/json':
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': 7 })
        res.end('{"a":1}')
        break
      case '/chunked':
        res.writeHead(202, { 'content-type': 'application/json' })
        res.write('{"status":')
        setTimeout(() => res.end('"pending"}'), 10)
        break
      case '/short':
        res.writeHead(200, { 'content-type': BYTES, 'content-length': 1000 })
        res.write(Buffer.alloc(10))
        setTimeout(() => res.destroy(), 10)
        break
      default:
        res.writeHead(404, { 'content-type': 'application/json' })
        res.end('{"error":{"code":"OBJECT_NOT_FOUND","message":"no"}}')
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

describe('rawGet', () => {
  it('reads a byte body of known length into shared memory, intact', async () => {
    const { status, body } = await rawGet(`${base}/bytes`, { 'x-secret': 's' }, BYTES)
    expect(status).toBe(200)
    expect(body.buffer).toBeInstanceOf(SharedArrayBuffer)
    expect(Buffer.compare(Buffer.from(body), big)).toBe(0)
  })

  it('reads other bodies into plain memory, chunked ones joined', async () => {
    const json = await rawGet(`${base}/json`, { 'x-secret': 's' }, BYTES)
    expect(json.body.buffer).not.toBeInstanceOf(SharedArrayBuffer)
    expect(Buffer.from(json.body).toString()).toBe('{"a":1}')
    const chunked = await rawGet(`${base}/chunked`, { 'x-secret': 's' }, BYTES)
    expect(chunked.status).toBe(202)
    expect(Buffer.from(chunked.body).toString()).toBe('{"status":"pending"}')
    const missing = await rawGet(`${base}/nothing`, { 'x-secret': 's' }, BYTES)
    expect(missing.status).toBe(404)
    expect(JSON.parse(Buffer.from(missing.body).toString()).error.code).toBe('OBJECT_NOT_FOUND')
  })

  it('fails when the body ends before its length, or nobody listens', async () => {
    await expect(rawGet(`${base}/short`, { 'x-secret': 's' }, BYTES)).rejects.toThrow(/ended early/)
    await expect(rawGet('http://127.0.0.1:1/x', {}, BYTES)).rejects.toThrow()
  })
})
