/**
 * The Kubernetes manifests (deploy/k8s): both overlays render with
 * `kubectl kustomize`, and every object they make is valid against the
 * Kubernetes schemas (kubernetes-models), with what the issue of running
 * there asks of each: probes, resources, the pod's IP, a disruption budget,
 * autoscaling, a grace period to hand a queue back.
 */
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parseAllDocuments } from 'yaml'
import { ROOT } from './helpers.ts'

type Manifest = {
  apiVersion: string
  kind: string
  metadata: { name: string }
  spec?: Record<string, unknown>
}

function render(overlay: string): Manifest[] {
  const text = execFileSync('kubectl', ['kustomize', join(ROOT, 'deploy/k8s/overlays', overlay)], {
    encoding: 'utf8',
  })
  return parseAllDocuments(text).map((d) => d.toJSON() as Manifest)
}

/** Validates an object with its kind's schema (kubernetes-models); throws what is wrong. */
async function validate(object: Manifest): Promise<void> {
  const [group, version] = object.apiVersion.includes('/')
    ? object.apiVersion.split('/')
    : ['', object.apiVersion]
  const path = group
    ? `kubernetes-models/${group}/${version}/${object.kind}`
    : `kubernetes-models/${version}/${object.kind}`
  const module = (await import(path)) as Record<string, new (data: unknown) => { validate(): void }>
  const Model = module[object.kind]
  if (!Model) throw new Error(`no schema for ${object.apiVersion} ${object.kind}`)
  new Model(object).validate()
}

type Container = {
  name: string
  livenessProbe?: unknown
  readinessProbe?: unknown
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> }
  env?: Array<{ name: string; value?: string; valueFrom?: Record<string, unknown> }>
}
type PodSpec = { terminationGracePeriodSeconds?: number; containers: Container[] }

/** The pod template's spec of a Deployment. */
const podOf = (o: Manifest): PodSpec => (o.spec as { template: { spec: PodSpec } }).template.spec

describe('the Kubernetes manifests', () => {
  for (const overlay of ['dev', 'prod']) {
    it(`renders the ${overlay} overlay into valid objects, with probes, limits, a budget and autoscaling`, async () => {
      const objects = render(overlay)
      for (const object of objects) await validate(object)
      const kinds = objects.map((o) => `${o.kind}/${o.metadata.name}`)
      for (const wanted of [
        'Service/magpie-head',
        'PersistentVolumeClaim/magpie-head-state',
        'Deployment/magpie-head',
        'Deployment/magpie-node',
        'PodDisruptionBudget/magpie-node',
        'HorizontalPodAutoscaler/magpie-node',
      ]) {
        expect(kinds).toContain(wanted)
      }
      for (const deployment of objects.filter((o) => o.kind === 'Deployment')) {
        const pod = podOf(deployment)
        for (const c of pod.containers) {
          expect(c.livenessProbe, `${deployment.metadata.name} liveness`).toBeDefined()
          expect(c.readinessProbe, `${deployment.metadata.name} readiness`).toBeDefined()
          expect(c.resources?.requests?.cpu).toBeDefined()
          expect(c.resources?.limits?.memory).toBeDefined()
        }
      }
      const node = objects.find(
        (o) => o.kind === 'Deployment' && o.metadata.name === 'magpie-node',
      ) as Manifest
      const pod = podOf(node)
      const env = pod.containers[0]?.env ?? []
      expect(env.find((e) => e.name === 'POD_IP')?.valueFrom).toEqual({
        fieldRef: { fieldPath: 'status.podIP' },
      })
      expect(env.find((e) => e.name === 'MAGPIE_ADVERTISE_URL')?.value).toBe('http://$(POD_IP):8080')
      expect(env.find((e) => e.name === 'MAGPIE_JOIN')?.value).toBe('http://magpie-head:8080')
      // Long enough to drain: the stop grace (60 s) and a margin.
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(60)
      const secretNames = objects.filter((o) => o.kind === 'Secret').map((o) => o.metadata.name)
      const head = objects.find(
        (o) => o.kind === 'Deployment' && o.metadata.name === 'magpie-head',
      ) as Manifest
      const headEnv = podOf(head).containers[0]?.env ?? []
      const tokenRef = headEnv.find((e) => e.name === 'MAGPIE_TOKEN')?.valueFrom as {
        secretKeyRef: { name: string }
      }
      // dev makes its Secret; prod expects one made beforehand, named magpie.
      if (overlay === 'dev') expect(secretNames).toContain(tokenRef.secretKeyRef.name)
      else expect(tokenRef.secretKeyRef.name).toBe('magpie')
    }, 60_000)
  }
})
