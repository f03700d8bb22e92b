// The pod watch (kit's WatchCache, compute's kubernetes-pod-cache.ts) against the in-process
// fake serving watches: reads of a VPC from memory with no API call, the VPCs that changed,
// falling back to live reads when the API server goes; then compute itself, whose reconciler
// records a crash nobody reads within a pass, with the sweep an hour away.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createLogger, vpcNamespace, UnavailableError } from '@pier/kit';
import { FakeKubernetes } from '@pier/testing';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import { startCompute, until, type Compute } from './support.ts';
import { target, workloadSpec } from './workload-spec.ts';

const log = createLogger('test', 'warn');
let fake: FakeKubernetes;
let kubeconfig: string;

beforeAll(async () => {
  fake = await new FakeKubernetes({ watch: true }).start();
  kubeconfig = await fake.writeKubeconfig();
});

// stop() also removes the kubeconfig files written while it ran.
afterAll(() => fake?.stop());

/** GETs of pod lists, cluster-wide or of a namespace (not watches). */
const podLists = () => fake.requests.filter((r) => r.method === 'GET' && /\/pods$/.test(r.path) && !r.query.includes('watch=true'));

describe('the pod watch', () => {
  it('answers a VPC from memory, says which VPCs changed, and reads live once the API server is gone', async () => {
    const own = await new FakeKubernetes({ watch: true }).start();
    const file = await own.writeKubeconfig();
    const cluster = KubernetesCluster.fromKubeconfig(file, log, undefined, undefined, true);
    const scope = { workspaceId: randomUUID(), vpcId: randomUUID() };
    const other = { workspaceId: randomUUID(), vpcId: randomUUID() };
    try {
      cluster.start();
      expect(await cluster.pods!.synced(5000)).toBe(true);
      const image = `registry.example/watched-${randomBytes(3).toString('hex')}:1`;
      const s = workloadSpec(scope, { name: 'api', health_check_path: '/healthz', min_replicas: 2 }, [], image);
      await cluster.apply(s);
      await cluster.apply(workloadSpec(other, { name: 'elsewhere', health_check_path: '/healthz' }));

      const observe = () => cluster.observeMany(scope, [target(s)]);
      const ready = await until(observe, (r) => r.observations.get(s.serviceId)?.readyReplicas === 2);
      const listsBefore = podLists().length;
      for (let i = 0; i < 20; i++) expect((await observe()).calls).toBe(0);
      expect(await cluster.workloads(scope)).toEqual([expect.objectContaining({ serviceId: s.serviceId, deploymentIds: [s.deploymentId] })]);
      expect(podLists().length, 'no pod list while the watch is connected').toBe(listsBefore);
      expect(ready.observations.get(s.serviceId)?.readyReplicas).toBe(2);
      // The pods are kept without their spec's containers' images, env or managed fields.
      const kept = cluster.pods!.items(vpcNamespace(scope.vpcId))!;
      expect(kept).toHaveLength(2);
      expect(JSON.stringify(kept)).not.toContain(image);
      // Of the labels, only those a status or the sweep reads.
      expect(Object.keys(kept[0]!.metadata!.labels!).sort()).toEqual(['app.kubernetes.io/name', 'pier.dev/deployment', 'pier.dev/role', 'pier.dev/service']);
      // Of a real kubelet's five conditions, only those a status reads.
      const pod = own.list('Pod', vpcNamespace(scope.vpcId))[0]!;
      const conditions = ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({ type, status: 'True' }));
      own.setStatus('v1', 'Pod', pod.metadata.namespace, pod.metadata.name, { ...pod.status, conditions });
      const updated = await until(
        async () => cluster.pods!.items(vpcNamespace(scope.vpcId))!.find((p) => p.metadata!.name === pod.metadata.name),
        (p) => !!p?.status?.conditions?.some((c) => c.type === 'PodScheduled'),
      );
      expect(updated!.status!.conditions!.map((c) => c.type)).toEqual(['Ready', 'PodScheduled']);

      await until(
        async () => cluster.pods!.items(vpcNamespace(other.vpcId)),
        (pods) => pods?.length === 1,
      );
      // Nothing happens: nothing changed. Then a crash: its VPC changed since the cursor.
      const quiet = cluster.changes.cursor();
      await sleep(300);
      expect(cluster.changes.vpcsChangedSince(quiet)).toEqual(new Set());
      const cursor = cluster.changes.cursor();
      own.crashingImages.add(image);
      own.refreshPods();
      await until(
        async () => cluster.changes.vpcsChangedSince(cursor),
        (c) => !!c?.has(scope.vpcId),
      );
      await until(observe, (r) => r.observations.get(s.serviceId)?.readyReplicas === 0);

      // Gone: the watch is dropped, nothing is answered from the copy, and a read goes live (and fails).
      await own.stop();
      await until(
        async () => cluster.changes.vpcsChangedSince(0),
        (c) => c === undefined,
      );
      await expect(observe()).rejects.toBeInstanceOf(UnavailableError);
    } finally {
      await cluster.stop();
      await own.stop();
    }
  });

  it('reads live, as before, from an API server that does not serve watches', async () => {
    const plain = await new FakeKubernetes().start();
    const file = await plain.writeKubeconfig();
    const cluster = KubernetesCluster.fromKubeconfig(file, log, undefined, undefined, true);
    try {
      cluster.start();
      expect(await cluster.pods!.synced(1000)).toBe(false);
      const scope = { workspaceId: randomUUID(), vpcId: randomUUID() };
      const s = workloadSpec(scope, { name: 'api', health_check_path: '/healthz' });
      await cluster.apply(s);
      expect((await cluster.observeMany(scope, [target(s)])).calls).toBe(1);
      expect(cluster.changes.vpcsChangedSince(0)).toBeUndefined();
    } finally {
      await cluster.stop();
      await plain.stop();
    }
  });
});

describe('compute with the pod watch', () => {
  let c: Compute;

  beforeAll(async () => {
    // The sweep an hour away: only the pass's look at changed VPCs can record the crash.
    c = await startCompute({ PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: kubeconfig, PIER_COMPUTE_SWEEP_INTERVAL_SECONDS: '3600' });
  }, 60_000);

  afterAll(async () => {
    await c?.stop();
  });

  it('lists services with no cluster call, and records a crash nobody reads within a few passes', async () => {
    const image = `registry.example/falls-over-${randomBytes(3).toString('hex')}:1`;
    const created = await c.post(c.base, { name: 'unwatched', image, service_type: 'worker' });
    expect(created.status).toBe(201);
    await until(
      () => c.get(`${c.base}/${created.body.id}`).then((r) => r.body),
      (s) => s.status === 'running',
    );
    const list = await c.get(c.base);
    expect(list.body.items.map((s: { id: string }) => s.id)).toEqual([created.body.id]);
    expect(list.headers.get('x-pier-cluster-calls')).toBe('0');

    fake.crashingImages.add(image);
    fake.refreshPods();
    const client = new pg.Client({ connectionString: c.db.adminUrl });
    await client.connect();
    try {
      // From the database only: an API read would refresh the status itself. The pass runs
      // every 500 ms here; the next sweep is an hour away.
      await until(
        async () => (await client.query('select status from compute.services where id = $1', [created.body.id])).rows[0],
        (r) => r.status === 'crashed',
        10_000,
      );
      const event = await client.query("select payload from compute.outbox where kind = 'service.status_changed' and payload->>'resource_id' = $1", [
        created.body.id,
      ]);
      expect(event.rows.map((r) => r.payload.data.to)).toContain('crashed');
    } finally {
      await client.end();
    }
  });
});

describe('the sweep with the pod watch', () => {
  let c: Compute;

  beforeAll(async () => {
    c = await startCompute({ PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: kubeconfig, PIER_COMPUTE_SWEEP_INTERVAL_SECONDS: '1' });
  }, 60_000);

  afterAll(async () => {
    await c?.stop();
  });

  it('removes a workload no record accounts for, found where pods changed, without listing pods', async () => {
    const kns = vpcNamespace(c.vpcId);
    // The sweep looks in VPCs that have services.
    const kept = await c.post(c.base, { name: 'kept', image: 'registry.example/kept:1' });
    expect(kept.status).toBe(201);
    const listsBefore = podLists().filter((r) => r.path.includes(kns)).length;
    const adapter = KubernetesCluster.fromKubeconfig(kubeconfig, log);
    await adapter.apply(workloadSpec({ workspaceId: c.workspaceId, vpcId: c.vpcId }, { name: 'stray', image: 'registry.example/stray:1' }));
    expect(fake.get('apps/v1', 'Deployment', kns, 'stray')).toBeDefined();
    await until(
      async () => fake.get('apps/v1', 'Deployment', kns, 'stray'),
      (d) => d === undefined,
      20_000,
    );
    expect(podLists().filter((r) => r.path.includes(kns)).length, "the sweep read the VPC's pods from the watch").toBe(listsBefore);
  });
});
