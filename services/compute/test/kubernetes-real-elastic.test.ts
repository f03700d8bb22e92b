// on_demand services on the REAL single-node Kubernetes (deploy/kube/cluster.sh): compute's
// activator, bound to the node's address, is where their Ingress points (a Service in the
// VPC's namespace whose EndpointSlice is the activator), and the cluster's ingress
// controller (Traefik) routes it: every request here goes to Traefik over HTTPS with the
// service's host, as a client's would. The service sleeps after its idle timeout (its
// Deployment at 0, no pod) and the next request wakes it: held while a real pod starts,
// answered with Server-Timing. No X-Pier-* header picks a service.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type http from 'node:http';
import { vpcNamespace } from '@pier/kit';
import { adminQuery, realKubernetes, type RealKubernetes } from '@pier/testing';
import { ACTIVATOR_SERVICE } from '../src/cluster/kubernetes-edge-manifests.ts';
import { onRealCluster, startCompute, until, TINY_HTTP, type Compute } from './support.ts';

let k: RealKubernetes;
let c: Compute;
let ns: string;

interface Answer {
  status: number;
  body: string;
  headers: http.IncomingHttpHeaders;
}

/** A client's request through the ingress controller (Traefik's own certificate is not what is checked here). */
const viaIngress = (host: string, headers: Record<string, string> = {}): Promise<Answer> => k.viaIngress(host, headers, 60_000);

async function service(id: string): Promise<{ status: string; replicas: { desired: number; ready: number }; url: string }> {
  return (await c.get(`${c.base}/${id}`)).body;
}

const livePods = async (serviceId: string) =>
  (await k.list(`/api/v1/namespaces/${ns}/pods`, `pier.dev/service=${serviceId}`)).filter((p) => !p.metadata.deletionTimestamp);

beforeAll(async () => {
  k = realKubernetes();
  k.requireNode();
  const node = (await k.list('/api/v1/nodes'))[0]!;
  const nodeIp = node.status.addresses.find((a: { type: string }) => a.type === 'InternalIP').address as string;
  c = await startCompute({
    ...onRealCluster(k),
    PIER_COMPUTE_ACTIVATOR_ADDRESS: nodeIp,
    PIER_COMPUTE_ELASTIC_TICK_MS: '200',
  });
  ns = vpcNamespace(c.vpcId);
}, 60_000);

afterAll(async () => {
  await c?.stop();
  if (k && ns) await k.deleteNamespace(ns);
});

describe('an on_demand service on a real cluster', () => {
  it('is reached through the activator, sleeps after its idle timeout, and wakes on the next request with Server-Timing', async () => {
    const res = await c.post(c.base, { name: 'sleepy', image: TINY_HTTP, deployment_mode: 'on_demand', idle_timeout_seconds: 10 });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const id: string = res.body.id;
    const host = new URL(res.body.url).hostname;
    await until(
      () => service(id),
      (s) => s.status === 'running' && s.replicas.ready === 1,
      90_000,
    );
    // Its Ingress points at the activator's Service, whose endpoint is compute.
    const ingress = await until(
      () => k.get(`/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses/sleepy`),
      (i) => i.spec.rules[0].http.paths[0].backend.service.name === ACTIVATOR_SERVICE,
      20_000,
    );
    expect(ingress.spec.rules[0].host).toBe(host);
    expect((await k.get(`/api/v1/namespaces/${ns}/services/${ACTIVATOR_SERVICE}`)).spec.selector).toBeUndefined();

    const awake = await viaIngress(host);
    expect(awake.status).toBe(200);
    expect(awake.body).toContain('hello from pier/tiny-http');
    expect(awake.headers['server-timing']).toBeUndefined();
    // No header picks the service here: only the Host does.
    const spoofed = await viaIngress(`nothing.${k.appsDomain}`, {
      'x-pier-service': id,
      'x-pier-vpc': c.vpcId,
      'x-pier-port': '8080',
    });
    expect(spoofed.status).toBe(404);

    // Asleep: the Deployment at 0 and no pod left.
    const asleep = await until(
      () => service(id),
      (s) => s.status === 'scaled',
      60_000,
    );
    expect(asleep.replicas).toEqual({ desired: 0, ready: 0 });
    expect((await k.get(`/apis/apps/v1/namespaces/${ns}/deployments/sleepy`)).spec.replicas).toBe(0);
    await until(
      () => livePods(id),
      (pods) => pods.length === 0,
      60_000,
    );

    const t0 = Date.now();
    const woken = await viaIngress(host);
    const ms = Date.now() - t0;
    expect(woken.status).toBe(200);
    expect(woken.body).toContain('hello from pier/tiny-http');
    expect(woken.headers['server-timing']).toMatch(/^wake;dur=\d+$/);
    expect((await k.get(`/apis/apps/v1/namespaces/${ns}/deployments/sleepy`)).spec.replicas).toBe(1);
    const events = await adminQuery(
      c.db.adminUrl,
      `select kind from compute.outbox where payload->>'resource_id' = $1 and kind in ('service.slept', 'service.woken') order by id`,
      [id],
    );
    expect(events.map((e: { kind: string }) => e.kind)).toEqual(['service.slept', 'service.woken']);
    console.log(`kubernetes wake through the activator: ${ms} ms (a real pod scheduled, started and answering)`);
  }, 240_000);
});
