/** The serving example: the batched model answers each concurrent caller with its own score. */
import { resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Platform, startPlatform } from '../../gateway/platform.ts'
import { local } from '../../sdk/testing.ts'

const functions = resolve(import.meta.dirname, 'functions')

describe('the serving example', () => {
  it('scores a review in local mode (a batch of one)', async () => {
    const mp = local(functions)
    expect(await mp.call('model', { text: 'great food, love it' })).toMatchObject({ label: 'positive' })
    expect(await mp.call('model-one', { text: 'cold and slow' })).toMatchObject({ label: 'negative' })
  })

  describe('on a platform', () => {
    let platform: Platform
    beforeAll(async () => {
      platform = await startPlatform({ functionsDir: functions, port: 0, cpus: 2 })
    }, 30_000)
    afterAll(() => platform?.close())

    it('batches concurrent curl-style calls and splits the scores back in order', async () => {
      const texts = Array.from({ length: 24 }, (_, i) => (i % 2 === 0 ? `great, love it ${i}` : `meh ${i}`))
      const answers = await Promise.all(
        texts.map(async (text) => {
          const res = await fetch(`${platform.url}/v1/functions/model/invoke?wait=30`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify([{ text }]),
          })
          expect(res.status).toBe(200)
          return (await res.json()) as { label: string }
        }),
      )
      expect(answers.map((a) => a.label)).toEqual(
        texts.map((_, i) => (i % 2 === 0 ? 'positive' : 'negative')),
      )
    })
  })
})
