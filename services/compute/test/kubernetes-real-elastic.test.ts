// on_demand services on the REAL single-node Kubernetes (deploy/kube/cluster.sh): compute's
// activator, bound to the node's address, is where their Ingress points (a Service in the
// VPC's namespace whose EndpointSlice is the activator), and the cluster's ingress
// controller (Traefik) routes it: every request here goes to Traefik over HTTPS with the
// service's host, as a client's would. The service sleeps after its idle timeout (its
// Deployment at 0, no pod) and the next request wakes it: held while a real pod starts,
// answered with Server-Timing. No X-Pier-* header picks a service. An always_on service
// with max_replicas above its floor goes through the activator too, which counts its
// requests in flight: it autoscales on target_concurrency, with no HorizontalPodAutoscaler.
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

/** A service created and running with one ready replica. */
async function runningService(body: Record<string, unknown>): Promise<{ id: string; host: string }> {
  const res = await c.post(c.base, { image: TINY_HTTP, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const id: string = res.body.id;
  await until(
    () => service(id),
    (s) => s.status === 'running' && s.replicas.ready === 1,
    90_000,
  );
  return { id, host: new URL(res.body.url).hostname };
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
    PIER_COMPUTE_AUTOSCALE_DOWN_DELAY_SECONDS: '5',
  });
  ns = vpcNamespace(c.vpcId);
}, 60_000);

afterAll(async () => {
  await c?.stop();
  if (k && ns) await k.deleteNamespace(ns);
});

describe('an on_demand service on a real cluster', () => {
  it('is reached through the activator, sleeps after its idle timeout, and wakes on the next request with Server-Timing', async () => {
    const { id, host } = await runningService({ name: 'sleepy', deployment_mode: 'on_demand', idle_timeout_seconds: 10 });
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

describe('a web service autoscaled on its requests on a real cluster', () => {
  it('scales up to exactly max_replicas on requests in flight through the ingress and back to its floor, failing no request', async () => {
    const { id, host } = await runningService({ name: 'busy', min_replicas: 1, max_replicas: 3, target_concurrency: 1 });
    await until(
      () => k.get(`/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses/busy`),
      (i) => i.spec.rules[0].http.paths[0].backend.service.name === ACTIVATOR_SERVICE,
      20_000,
    );
    // The controller chooses its replicas: an HPA would fight it.
    expect((await k.request('GET', `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers/busy`)).status).toBe(404);

    const statuses: number[] = [];
    const desired: number[] = [];
    let loading = true;
    const t0 = Date.now();
    // Six clients, each with one slow request in flight at a time: six per one-replica target.
    const clients = Array.from({ length: 6 }, async () => {
      while (loading) statuses.push((await k.viaIngress(host, {}, 30_000, '/cgi-bin/slow?0.5')).status);
    });
    const top = await until(
      async () => {
        const s = await service(id);
        desired.push(s.replicas.desired);
        return s;
      },
      (s) => s.replicas.desired === 3 && s.replicas.ready === 3,
      120_000,
    );
    const upMs = Date.now() - t0;
    expect(top.replicas).toEqual({ desired: 3, ready: 3 });
    expect((await k.get(`/apis/apps/v1/namespaces/${ns}/deployments/busy`)).spec.replicas).toBe(3);
    // A few more rounds while all three are ready: each pod answers some.
    await new Promise((r) => setTimeout(r, 3_000));
    loading = false;
    await Promise.all(clients);

    // A trickle while it scales down: the drained pods are the ones the ReplicaSet stops.
    let trickling = true;
    const trickle = (async () => {
      while (trickling) statuses.push((await k.viaIngress(host, {}, 30_000)).status);
    })();
    const t1 = Date.now();
    const floor = await until(
      async () => {
        const s = await service(id);
        desired.push(s.replicas.desired);
        return s;
      },
      (s) => s.replicas.desired === 1,
      90_000,
    );
    await until(
      () => livePods(id),
      (pods) => pods.length === 1,
      60_000,
    );
    const downMs = Date.now() - t1;
    trickling = false;
    await trickle;
    expect(floor.replicas.desired).toBe(1);
    expect(Math.max(...desired)).toBe(3);
    expect(statuses.filter((st) => st !== 200)).toEqual([]);
    expect(statuses.length).toBeGreaterThan(20);
    // The scale-down's event is written once its pods are going.
    const scaled = await until(
      () =>
        adminQuery(
          c.db.adminUrl,
          `select payload->'data' as data from compute.outbox where payload->>'resource_id' = $1 and kind = 'service.autoscaled' order by id`,
          [id],
        ),
      (rows) => rows.at(-1)?.data.to === 1,
      20_000,
    );
    expect(scaled.at(0)?.data).toMatchObject({ from: 1 });
    expect(scaled.every((e: { data: { to: number } }) => e.data.to <= 3)).toBe(true);
    console.log(
      `kubernetes autoscaling on requests: 1 -> 3 ready in ${upMs} ms under 6 clients; back to 1 pod ${downMs} ms after the load stopped (delay 5 s); ${statuses.length} requests, none failed`,
    );
  }, 300_000);
});
