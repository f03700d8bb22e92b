// Service metrics on Kubernetes, against the in-process fake of the API serving
// metrics.k8s.io PodMetrics as metrics-server does: the adapter's read (one cluster-wide list
// by compute's pod selector, quantities to cores and bytes), then compute on it — CPU and
// memory summed over the service's pods, and, with no ingress metrics configured, requests
// shown as not counted (the ingress controller sends them to the pods without passing
// through Pier), never as zeros.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { createLogger, resourcesOf, vpcNamespace } from '@pier/kit';
import { FakeKubernetes } from '@pier/testing';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import { KubernetesUsage, quantityCores } from '../src/cluster/kubernetes-usage.ts';
import { configFromCreate } from '../src/domain/services/service-config.ts';
import { startCompute, until, type Compute } from './support.ts';

const log = createLogger('test', 'warn');
let fake: FakeKubernetes;
let kubeconfig: string;

beforeAll(async () => {
  fake = await new FakeKubernetes().start();
  kubeconfig = await fake.writeKubeconfig();
});

afterAll(async () => {
  await fake?.stop();
  if (kubeconfig) await rm(path.dirname(kubeconfig), { recursive: true, force: true });
});

const podsOf = (ns: string, serviceId: string) =>
  fake
    .list('Pod', ns)
    .filter((p) => p.metadata.labels['pier.dev/service'] === serviceId)
    .map((p) => p.metadata.name as string)
    .sort();

describe('kubernetes pod usage', () => {
  it('reads CPU quantities as cores', () => {
    expect(quantityCores('250m')).toBe(0.25);
    expect(quantityCores('12345678n')).toBeCloseTo(0.012345678);
    expect(quantityCores('1500u')).toBeCloseTo(0.0015);
    expect(quantityCores('2')).toBe(2);
    expect(quantityCores('lots')).toBeNull();
  });

  it("lists every service pod's usage in one call, by compute's selector, with the pod's service", async () => {
    const vpcId = randomUUID();
    const config = configFromCreate({ name: 'busy', service_type: 'worker', min_replicas: 2 });
    const spec = {
      workspaceId: randomUUID(),
      vpcId,
      serviceId: randomUUID(),
      serviceName: 'busy',
      deploymentId: randomUUID(),
      image: 'registry.example/busy:1',
      config,
      resources: resourcesOf(config.instance_type),
      env: [],
    };
    await new KubernetesCluster(kubeConfigFrom(kubeconfig), log).apply(spec);
    const ns = vpcNamespace(vpcId);
    const [a, b] = podsOf(ns, spec.serviceId);
    fake.podMetrics.set(ns, a!, { cpu: '12000000n', memory: '30Mi' });
    fake.podMetrics.set(ns, b!, { cpu: '8m', memory: '10240Ki' });
    const usage = new KubernetesUsage(kubeConfigFrom(kubeconfig));
    const requestsBefore = fake.requests.length;
    const mine = (await usage.usage()).filter((u) => u.serviceId === spec.serviceId).sort((x, y) => x.replica.localeCompare(y.replica));
    expect(fake.requests.length - requestsBefore).toBe(1);
    const listed = fake.requests[fake.requests.length - 1]!;
    expect(listed.path).toBe('/apis/metrics.k8s.io/v1beta1/pods');
    expect(decodeURIComponent(listed.query)).toContain('pier.dev/kind=service');
    expect(mine.map((u) => u.replica)).toEqual([`${ns}/${a}`, `${ns}/${b}`]);
    expect(mine[0]!.cpuCores).toBeCloseTo(0.012);
    expect(mine[0]!.memoryBytes).toBe(30 * 1024 * 1024);
    expect(mine[1]!.cpuCores).toBeCloseTo(0.008);
    expect(mine[1]!.memoryBytes).toBe(10 * 1024 * 1024);
  });
});

describe('service metrics on kubernetes', () => {
  let c: Compute;

  beforeAll(async () => {
    c = await startCompute({
      PIER_CLUSTER: 'kubernetes',
      PIER_KUBECONFIG: kubeconfig,
      PIER_COMPUTE_METRICS_SAMPLE_MS: '500',
      PIER_COMPUTE_METRICS_FLUSH_MS: '500',
    });
  }, 60_000);

  afterAll(async () => {
    await c?.stop();
  });

  it("sums CPU and memory over the pods, and says requests are not counted there without the ingress controller's metrics", async () => {
    const svc = (await c.post(c.base, { name: 'api', image: 'registry.example/api:1', min_replicas: 2 })).body;
    const ns = vpcNamespace(c.vpcId);
    const pods = await until(
      async () => podsOf(ns, svc.id),
      (p) => p.length === 2,
    );
    for (const p of pods) fake.podMetrics.set(ns, p, { cpu: '15m', memory: '20Mi' });
    const m = await until(
      () => c.get(`${c.base}/${svc.id}/metrics`).then((r) => r.body),
      (b) => b.points.some((p: any) => p.cpu_cores !== null),
      15_000,
    );
    const last = [...m.points].reverse().find((p: any) => p.cpu_cores !== null);
    expect(last.cpu_cores).toBeCloseTo(0.03);
    expect(last.memory_bytes).toBe(40 * 1024 * 1024);
    expect(m.requests_unavailable).toMatch(/not counted on this kubernetes installation.*PIER_COMPUTE_INGRESS_METRICS_URLS/);
    expect(m.points.every((p: any) => p.requests_per_second === null && p.responses === null && p.latency_p50_ms === null)).toBe(true);
    expect(m.totals).toEqual({ requests: null, responses: null, latency_p50_ms: null, latency_p95_ms: null });
  });
});
