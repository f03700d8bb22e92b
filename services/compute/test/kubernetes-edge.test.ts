// The edge on the kubernetes adapter against the fake Kubernetes API: an Ingress per web
// service and a cert-manager Certificate per custom domain, each validated by the fake
// against the Kubernetes schemas and cert-manager's CRD. cert-manager itself does not run
// here: the tests write the Certificate's status as cert-manager would (marked below).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { createLogger, vpcNamespace } from '@pier/kit';
import { FakeKubernetes, validateManifest } from '@pier/testing';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import { KubernetesEdge, outcomeOf } from '../src/cluster/kubernetes-edge.ts';
import { ACTIVATOR_SERVICE, certificateManifest, certificateName, ingressManifest, tlsSecretName } from '../src/cluster/kubernetes-edge-manifests.ts';
import type { EdgeRoute } from '../src/domain/edge/edge-port.ts';

const log = createLogger('test', 'warn');
let fake: FakeKubernetes;
let kubeconfig: string;
let edge: KubernetesEdge;
const vpcId = randomUUID();
const workspaceId = randomUUID();
const ns = vpcNamespace(vpcId);
const settings = { clusterIssuer: 'pier-acme', ingressClass: 'nginx', appsTlsSecret: 'apps-wildcard', addresses: ['203.0.113.10'] };

function route(customHosts: string[] = [], tlsHosts: string[] = []): EdgeRoute {
  return {
    workspaceId,
    vpcId,
    serviceId: '6f1c2d3e-0000-4000-8000-000000000001',
    serviceName: 'web',
    port: 8080,
    serviceHost: 'web-6f1c2d3e.apps.example.com',
    customHosts,
    tlsHosts,
    activator: null,
  };
}

beforeAll(async () => {
  fake = await new FakeKubernetes().start();
  kubeconfig = await fake.writeKubeconfig();
  // The VPC's namespace, as the cluster adapter makes it.
  await KubernetesCluster.fromKubeconfig(kubeconfig, log).ensureVpc({ workspaceId: randomUUID(), vpcId });
  edge = new KubernetesEdge(kubeConfigFrom(kubeconfig), settings, log);
});

afterAll(async () => {
  await fake?.stop();
  if (kubeconfig) await rm(path.dirname(kubeconfig), { recursive: true, force: true });
});

describe('edge manifests', () => {
  it('are valid Kubernetes objects and cert-manager Certificates', () => {
    const hosts = ['www.example.com', 'xn--bcher-kva.example.com'];
    const ingress = ingressManifest(route(hosts, ['www.example.com']), settings);
    validateManifest(ingress);
    expect(ingress.spec).toMatchObject({
      ingressClassName: 'nginx',
      tls: [
        { hosts: ['web-6f1c2d3e.apps.example.com'], secretName: 'apps-wildcard' },
        { hosts: ['www.example.com'], secretName: tlsSecretName('www.example.com') },
      ],
    });
    expect((ingress.spec as any).rules.map((r: any) => r.host)).toEqual(['web-6f1c2d3e.apps.example.com', ...hosts]);
    for (const h of [...hosts, `${'long-label-'.repeat(5)}x.example.com`]) validateManifest(certificateManifest(route(), h, settings));
  });

  it('an invalid Certificate is refused by the schema', () => {
    const bad = certificateManifest(route(), 'www.example.com', settings);
    (bad.spec as any).issuerRef = { kind: 'ClusterIssuer' };
    expect(() => validateManifest(bad)).toThrow(/name/);
  });
});

describe('KubernetesEdge on the fake API', () => {
  it('applies one Ingress per routed service, again only when it changed, and removes it when the service leaves', async () => {
    await edge.sync([route(['www.example.com'])]);
    const ingress = fake.get('networking.k8s.io/v1', 'Ingress', ns, 'web');
    expect((ingress!.spec as any).rules.map((r: any) => r.host)).toContain('www.example.com');
    const applies = () => fake.requests.filter((r) => r.method === 'PATCH' && r.path.includes('/ingresses/')).length;
    const before = applies();
    await edge.sync([route(['www.example.com'])]);
    expect(applies()).toBe(before);
    await edge.sync([]);
    expect(fake.get('networking.k8s.io/v1', 'Ingress', ns, 'web')).toBeUndefined();
    expect(fake.invalid).toEqual([]);
  });

  it('keeps the Ingress of a service that took the name of one deleted since the last sync', async () => {
    // The same name in the same VPC is the same Ingress: the new service's, not the old one's to remove.
    await edge.sync([route(['www.example.com'])]);
    const successor = { ...route(['shop.example.com']), serviceId: randomUUID(), serviceHost: 'web-successor.apps.example.com' };
    await edge.sync([successor]);
    const ingress = fake.get('networking.k8s.io/v1', 'Ingress', ns, 'web');
    expect((ingress?.spec as any)?.rules.map((r: any) => r.host)).toEqual(['web-successor.apps.example.com', 'shop.example.com']);
    await edge.sync([]);
    expect(fake.get('networking.k8s.io/v1', 'Ingress', ns, 'web')).toBeUndefined();
  });

  it('a compute that starts reads the Ingresses applied before: it sends none again, and removes none it did not route', async () => {
    const gone = { ...route(), serviceId: '6f1c2d3e-0000-4000-8000-000000000003', serviceName: 'gone', serviceHost: 'gone-6f1c2d3e.apps.example.com' };
    await new KubernetesEdge(kubeConfigFrom(kubeconfig), settings, log).sync([route(['www.example.com']), gone]);
    const applies = () => fake.requests.filter((r) => r.method === 'PATCH' && r.path.includes('/ingresses/')).length;
    const before = applies();
    // A new process (a restart, a leader taking over) with the table as it now stands.
    const restarted = new KubernetesEdge(kubeConfigFrom(kubeconfig), settings, log);
    await restarted.sync([route(['www.example.com'])]);
    expect(applies()).toBe(before);
    expect(fake.get('networking.k8s.io/v1', 'Ingress', ns, 'web')).toBeDefined();
    // Not in its table: another compute's (tests share one cluster), or a service whose teardown removes it.
    expect(fake.get('networking.k8s.io/v1', 'Ingress', ns, 'gone')).toBeDefined();
    // A route that changed is applied, once.
    await restarted.sync([route(['www.example.com', 'shop.example.com'])]);
    await restarted.sync([route(['www.example.com', 'shop.example.com'])]);
    expect(applies()).toBe(before + 1);
    expect((fake.get('networking.k8s.io/v1', 'Ingress', ns, 'web')!.spec as any).rules.map((r: any) => r.host)).toContain('shop.example.com');
    // An Ingress applied without its hash (by a compute before this one) is applied again, once.
    delete fake.get('networking.k8s.io/v1', 'Ingress', ns, 'web')!.metadata.annotations;
    await new KubernetesEdge(kubeConfigFrom(kubeconfig), settings, log).sync([route(['www.example.com', 'shop.example.com'])]);
    expect(applies()).toBe(before + 2);
    await restarted.sync([]);
    expect(fake.list('Ingress', ns).map((i) => i.metadata.name)).toEqual(['gone']);
    // The compute whose table has it removes it once its service leaves.
    const owner = new KubernetesEdge(kubeConfigFrom(kubeconfig), settings, log);
    await owner.sync([gone]);
    await owner.sync([]);
    expect(fake.list('Ingress', ns)).toEqual([]);
    expect(fake.invalid).toEqual([]);
  });

  it('asks cert-manager for a certificate and reads its Ready condition', async () => {
    const r = route(['www.example.com']);
    expect(await edge.certify(r, 'www.example.com')).toMatchObject({ status: 'pending' });
    const cert = fake.get('cert-manager.io/v1', 'Certificate', ns, certificateName('www.example.com'))!;
    expect(cert.spec).toMatchObject({ dnsNames: ['www.example.com'], issuerRef: { name: 'pier-acme', kind: 'ClusterIssuer' } });
    // Simulated: what cert-manager writes once the ACME order is valid.
    cert.status = { conditions: [{ type: 'Ready', status: 'True', reason: 'Ready' }], notAfter: '2027-02-23T09:00:00Z' };
    expect(await edge.certify(r, 'www.example.com')).toEqual({ status: 'issued', issuer: 'pier-acme', expiresAt: new Date('2027-02-23T09:00:00Z') });
    await edge.removeCertificate(r, 'www.example.com');
    expect(fake.get('cert-manager.io/v1', 'Certificate', ns, certificateName('www.example.com'))).toBeUndefined();
  });

  it("reads a failed issuance as failed, with cert-manager's message", () => {
    expect(
      outcomeOf(
        { conditions: [{ type: 'Ready', status: 'False', reason: 'Failed', message: 'the ACME order was refused' }], lastFailureTime: '2026-11-25T09:00:00Z' },
        'pier-acme',
      ),
    ).toEqual({ status: 'failed', error: 'cert-manager: the ACME order was refused' });
    expect(outcomeOf({ conditions: [{ type: 'Ready', status: 'False', reason: 'Issuing', message: 'waiting for the order' }] }, 'pier-acme')).toMatchObject({
      status: 'pending',
    });
  });

  it("points an on_demand service's Ingress at the activator's Service, finds the service by Host, and removes the Service when none is left", async () => {
    const sleepy = { ...route(['www.example.com']), activator: { healthPath: '/healthz' } };
    const always = { ...route(), serviceId: '6f1c2d3e-0000-4000-8000-000000000002', serviceName: 'api', serviceHost: 'api-6f1c2d3e.apps.example.com' };
    const withActivator = new KubernetesEdge(kubeConfigFrom(kubeconfig), settings, log);
    withActivator.activator = { addresses: ['10.88.0.7'], port: 7122 };
    await withActivator.sync([sleepy, always]);
    expect(fake.invalid).toEqual([]);
    const backend = (name: string) => (fake.get('networking.k8s.io/v1', 'Ingress', ns, name)!.spec as any).rules[0].http.paths[0].backend.service;
    expect(backend('web')).toEqual({ name: ACTIVATOR_SERVICE, port: { number: 80 } });
    expect(backend('api')).toEqual({ name: 'api', port: { number: 8080 } });
    const slice = fake.get('discovery.k8s.io/v1', 'EndpointSlice', ns, ACTIVATOR_SERVICE)!;
    expect(slice).toMatchObject({ endpoints: [{ addresses: ['10.88.0.7'] }], ports: [{ name: 'http', port: 7122 }] });
    expect(slice.metadata.labels['kubernetes.io/service-name']).toBe(ACTIVATOR_SERVICE);
    expect((fake.get('v1', 'Service', ns, ACTIVATOR_SERVICE)!.spec as any).selector).toBeUndefined();
    // Only an on_demand service's hosts, in any case; an always_on one is the ingress's own.
    const target = { serviceId: sleepy.serviceId, vpcId, port: 8080, healthPath: '/healthz' };
    expect(withActivator.routeFor('web-6f1c2d3e.apps.example.com')).toEqual(target);
    expect(withActivator.routeFor('www.example.com')).toEqual(target);
    expect(withActivator.routeFor('api-6f1c2d3e.apps.example.com')).toBeNull();
    // No on_demand service left in the namespace: the activator's objects go, after the Ingresses moved.
    await withActivator.sync([{ ...sleepy, activator: null }, always]);
    expect(backend('web')).toEqual({ name: 'web', port: { number: 8080 } });
    expect(fake.get('v1', 'Service', ns, ACTIVATOR_SERVICE)).toBeUndefined();
    expect(fake.get('discovery.k8s.io/v1', 'EndpointSlice', ns, ACTIVATOR_SERVICE)).toBeUndefined();
    expect(withActivator.routeFor('web-6f1c2d3e.apps.example.com')).toBeNull();
    await withActivator.sync([]);
  });

  it('gives the configured address as where users enter', async () => {
    expect(await edge.entry()).toEqual({ host: '203.0.113.10', port: 443 });
    expect(await edge.addresses()).toEqual(['203.0.113.10']);
  });
});
