// A web service's url on the REAL single-node Kubernetes (deploy/kube/cluster.sh), through
// its ingress controller (Traefik, the cluster's default IngressClass): compute writes the
// Ingress, Traefik routes it to the pod, a client reaches the service over HTTPS by its
// host; a deleted service's host is no longer routed. Uptime checks go the same way, over
// HTTPS with the apps domain's certificate (Traefik's default, from the cluster's own CA). A
// service's disk is a real volume of the default StorageClass (local-path-provisioner): what
// it wrote is there after a restart and after a rolling deploy. The requests Traefik answers
// for a service are counted in its metrics, read from Traefik's own metrics per router.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { vpcNamespace } from '@pier/kit';
import { realKubernetes, type RealKubernetes } from '@pier/testing';
import { onRealCluster, startCompute, until, TINY_HTTP, type Compute } from './support.ts';

let k: RealKubernetes;
let c: Compute;
let ns: string;

/** Traefik's own certificate (no TLS Secret for this apps domain) is not what is checked here. */
const viaIngress = (host: string) => k.viaIngress(host);

beforeAll(async () => {
  k = realKubernetes();
  k.requireNode();
  k.ingressAddress();
  c = await startCompute({
    ...onRealCluster(k),
    PIER_UPTIME_MIN_INTERVAL_SECONDS: '1',
    PIER_UPTIME_TICK_MS: '200',
    PIER_COMPUTE_INGRESS_METRICS_INTERVAL_MS: '500',
    PIER_COMPUTE_METRICS_FLUSH_MS: '500',
  });
  ns = vpcNamespace(c.vpcId);
}, 60_000);

afterAll(async () => {
  await c?.stop();
  if (k && ns) await k.deleteNamespace(ns);
});

describe('a web service on a real cluster, through its ingress controller', () => {
  it('answers at its url once running, and not once deleted', async () => {
    const t = Date.now();
    const res = await c.post(c.base, { name: 'front', image: TINY_HTTP, port: 8080 });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const host = new URL(res.body.url).hostname;
    const answered = await until(
      () => viaIngress(host).catch((err: Error) => ({ status: 0, body: err.message })),
      (r) => r.status === 200,
      120_000,
      250,
    );
    expect(answered.body).toContain('hello from pier/tiny-http');
    console.log(`created → answering through the ingress: ${Date.now() - t} ms`);
    // Another host under the same domain is routed nowhere.
    expect((await viaIngress(`nothing.${k.appsDomain}`)).status).toBe(404);

    expect((await c.request('DELETE', `${c.base}/${res.body.id}`)).status).toBe(202);
    await until(
      () => viaIngress(host),
      (r) => r.status === 404,
      60_000,
      250,
    );
  }, 240_000);

  it('is checked by uptime through the ingress, as its users reach it: up with a verified certificate, down on a path it fails', async () => {
    const res = await c.post(c.base, { name: 'watched', image: TINY_HTTP, port: 8080 });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const uptime = `${c.base}/${res.body.id}/uptime`;
    const enabled = await c.post(uptime, { interval_seconds: 2, timeout_seconds: 1 });
    expect(enabled.status, JSON.stringify(enabled.body)).toBe(201);
    const up = await until(
      () => c.get(uptime).then((r) => r.body),
      (u) => u.status === 'up' || u.status === 'down',
      120_000,
      250,
    );
    // A certificate the check could not verify would be an error here, not a 200.
    expect(up).toMatchObject({ status: 'up', last_status_code: 200, last_error: null });

    expect((await c.post(uptime, { path: '/missing', interval_seconds: 2, timeout_seconds: 1 })).status).toBe(200);
    const down = await until(
      () => c.get(uptime).then((r) => r.body),
      (u) => u.status === 'down',
      60_000,
      250,
    );
    expect(down.last_status_code).toBe(404);
    expect(down.incidents[0]).toMatchObject({ ended_at: null });
    expect((await c.request('DELETE', `${c.base}/${res.body.id}`)).status).toBe(202);
  }, 240_000);

  it('counts the requests Traefik answers for it in its metrics, by status class, with their latency', async () => {
    const res = await c.post(c.base, { name: 'counted', image: TINY_HTTP, port: 8080 });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const host = new URL(res.body.url).hostname;
    const metrics = `${c.base}/${res.body.id}/metrics?window=1h`;
    await until(
      () => viaIngress(host).catch((err: Error) => ({ status: 0, body: err.message })),
      (r) => r.status === 200,
      120_000,
      250,
    );
    // Requests before the service's first counted one are not what is checked: wait for it.
    const before = await until(
      () => c.get(metrics).then((r) => r.body),
      (m) => (m.totals.requests ?? 0) >= 1,
      30_000,
      250,
    );
    expect(before.requests_unavailable).toBeNull();
    for (let i = 0; i < 30; i++) expect((await viaIngress(host)).status).toBe(200);
    for (let i = 0; i < 10; i++) expect((await k.viaIngress(host, {}, 10_000, '/missing')).status).toBe(404);
    // A host no Ingress names is Traefik's own 404, nobody's request.
    expect((await viaIngress(`nobody.${k.appsDomain}`)).status).toBe(404);
    const after = await until(
      () => c.get(metrics).then((r) => r.body),
      (m) => m.totals.requests >= before.totals.requests + 40,
      30_000,
      250,
    );
    expect(after.totals.requests).toBe(before.totals.requests + 40);
    expect(after.totals.responses['2xx']).toBe(before.totals.responses['2xx'] + 30);
    expect(after.totals.responses['4xx']).toBe(before.totals.responses['4xx'] + 10);
    expect(after.totals.responses['5xx']).toBe(0);
    // tiny-http answers on loopback within milliseconds; Traefik's buckets bound the figure.
    expect(after.totals.latency_p50_ms).toBeGreaterThan(0);
    expect(after.totals.latency_p95_ms).toBeLessThan(1000);
    console.log(`through Traefik: ${after.totals.requests} requests counted, p50 ${after.totals.latency_p50_ms} ms, p95 ${after.totals.latency_p95_ms} ms`);
    expect((await c.request('DELETE', `${c.base}/${res.body.id}`)).status).toBe(202);
  }, 240_000);

  it("keeps what a service wrote on its disk across a restart and a rolling deploy (a bound volume of the cluster's default StorageClass)", async () => {
    // Each start appends a line to /data/index.html, which it serves.
    const res = await c.post(c.base, {
      name: 'notes',
      image: TINY_HTTP,
      port: 8080,
      disk_size_gb: 1,
      disk_mount_path: '/data',
      command: ['/bin/busybox', 'sh', '-c', 'echo "boot $(date +%s)" >> /data/index.html; exec /bin/busybox httpd -f -p 8080 -h /data'],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const host = new URL(res.body.url).hostname;
    const first = await until(
      () => viaIngress(host).catch((err: Error) => ({ status: 0, body: err.message })),
      (r) => r.status === 200,
      120_000,
      250,
    );
    expect(first.body.match(/^boot /gm)).toHaveLength(1);
    const claims = await k.list(`/api/v1/namespaces/${ns}/persistentvolumeclaims`);
    expect(claims.map((p) => [p.status.phase, p.spec.storageClassName])).toEqual([['Bound', 'local-path']]);

    expect((await c.post(`${c.base}/${res.body.id}/restart`)).status).toBe(202);
    const again = await until(
      () => viaIngress(host).catch((err: Error) => ({ status: 0, body: err.message })),
      (r) => r.status === 200 && (r.body.match(/^boot /gm)?.length ?? 0) === 2,
      120_000,
      250,
    );
    expect(again.body.startsWith(first.body)).toBe(true);

    // A deploy rolls a new pod out on the same claim: a third boot, the same file.
    expect((await c.post(`${c.base}/${res.body.id}/deploy`, { image_tag: TINY_HTTP })).status).toBe(202);
    const rolled = await until(
      () => viaIngress(host).catch((err: Error) => ({ status: 0, body: err.message })),
      (r) => r.status === 200 && (r.body.match(/^boot /gm)?.length ?? 0) === 3,
      120_000,
      250,
    );
    expect(rolled.body.startsWith(again.body)).toBe(true);
  }, 300_000);
});
