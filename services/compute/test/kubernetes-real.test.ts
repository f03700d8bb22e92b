// The kubernetes adapter, and compute with the secrets service, on a REAL single-node
// Kubernetes (deploy/kube/cluster.sh, started by ./pier test): real Deployments whose pods
// run pier/tiny-http:1 from the node's containerd, a real CronJob firing a real Job, real
// Secrets resolved by the kubelet. kubernetes.test.ts keeps the fake API server for what
// no real cluster gives on demand (an API server that vanishes, exact request counting).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { createLogger, generateIdentityKeys, IDENTITY_HEADER, secretObjectName, vpcNamespace } from '@pier/kit';
import { createTestDatabase, infra, notStoredAsSent, realKubernetes, type RealKubernetes } from '@pier/testing';
import type * as secrets from '@pier/secrets';
import { KubernetesCluster, kubernetesError } from '../src/cluster/kubernetes.ts';
import { desiredObjects, egressPolicyManifest, namespaceManifest, networkPolicyManifest } from '../src/cluster/kubernetes-manifests.ts';
import { WorkloadRejectedError, type WorkloadSpec } from '../src/domain/cluster-port.ts';
import type { CreateServiceInput } from '../src/domain/services/service-config.ts';
import type { EnvEntry } from '../src/domain/env/env-input.ts';
import { startCompute, startSecretsFor, until, TINY_HTTP, EXITS, type Compute, type TestDatabase } from './support.ts';
import { target, workloadSpec } from './workload-spec.ts';

const log = createLogger('test', 'warn');
let k: RealKubernetes;
let cluster: KubernetesCluster;
const workspaceId = randomUUID();
const vpcId = randomUUID();
const ns = vpcNamespace(vpcId);
const namespaces = new Set<string>([ns]);

beforeAll(async () => {
  k = realKubernetes();
  // With the pod watch, as compute runs: every observation below reads the watched copy of the real API server's pods.
  cluster = KubernetesCluster.fromKubeconfig(k.kubeconfig, log, undefined, undefined, true);
  cluster.start();
  expect(await cluster.pods!.synced(30_000)).toBe(true);
});

afterAll(async () => {
  await cluster?.stop();
  // Deleting the namespaces removes all that is left in them; the cluster itself goes with the run.
  if (k) for (const n of namespaces) await k.deleteNamespace(n);
});

// svc.nano (the default, 250m): the node has 2 cores for every test's pods.
const spec = (input: CreateServiceInput, env: EnvEntry[] = [], image = TINY_HTTP) => workloadSpec({ workspaceId, vpcId }, input, env, image);

const observe = async (s: WorkloadSpec) => (await cluster.observeMany({ workspaceId, vpcId }, [target(s)])).observations.get(s.serviceId)!;
const podsOf = (namespace: string, serviceId: string) => k.list(`/api/v1/namespaces/${namespace}/pods`, `pier.dev/service=${serviceId}`);
/** Pods that are not on their way out. */
const livePods = async (namespace: string, serviceId: string) => (await podsOf(namespace, serviceId)).filter((p) => !p.metadata.deletionTimestamp);

async function httpGet(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  return { status: res.status, text: await res.text() };
}

describe('kubernetes adapter on a real cluster', () => {
  it('makes the VPC a real namespace with its NetworkPolicy, and every kind of object compute writes is accepted', async () => {
    // Control plane only: objects stored and validated by the real API server; no pod needed.
    const vpc = randomUUID();
    const objectsNs = vpcNamespace(vpc);
    namespaces.add(objectsNs);
    const scope = { workspaceId, vpcId: vpc };
    const all = [
      workloadSpec(
        scope,
        { name: 'web', health_check_path: '/healthz', max_replicas: 3, command: ['/bin/busybox'], args: ['httpd', '-f'] },
        [
          { key: 'MODE', value: 'prod' },
          { key: 'DB_PASSWORD', secret_id: randomUUID(), secret_key: 'PASSWORD' },
        ],
        TINY_HTTP,
      ),
      workloadSpec(scope, { name: 'disk', service_type: 'worker', disk_size_gb: 1, disk_mount_path: '/data', run_as_user: 1001 }, [], TINY_HTTP),
      workloadSpec(scope, { name: 'nightly', service_type: 'cron', cron_schedule: '0 3 * * *' }, [], TINY_HTTP),
      workloadSpec(scope, { name: 'idle', deployment_mode: 'on_demand', min_replicas: 0, max_replicas: 2 }, [], TINY_HTTP),
    ];
    for (const s of all) await cluster.apply(s);
    const ns0 = await k.get(`/api/v1/namespaces/${objectsNs}`);
    expect(ns0.metadata.labels).toMatchObject(namespaceManifest(scope).metadata.labels!);
    const policy = await k.get(`/apis/networking.k8s.io/v1/namespaces/${objectsNs}/networkpolicies/pier-vpc-isolation`);
    expect(policy.spec).toEqual(networkPolicyManifest(scope).spec);
    // What the API server stored is what the adapter built (plus its defaults).
    for (const s of all) {
      for (const m of desiredObjects(s).apply) {
        const group = m.apiVersion.includes('/') ? `/apis/${m.apiVersion}` : `/api/${m.apiVersion}`;
        const plural = {
          Deployment: 'deployments',
          Service: 'services',
          CronJob: 'cronjobs',
          HorizontalPodAutoscaler: 'horizontalpodautoscalers',
          PersistentVolumeClaim: 'persistentvolumeclaims',
        }[m.kind]!;
        const got = await k.get(`${group}/namespaces/${objectsNs}/${plural}/${m.metadata.name}`);
        expect(got.metadata.labels, `${m.kind}/${m.metadata.name}`).toEqual(m.metadata.labels);
        expect(notStoredAsSent(m.spec, got.spec), `${m.kind}/${m.metadata.name}`).toEqual([]);
      }
    }
    // An on_demand service at zero reads as scaled.
    expect((await cluster.observeMany(scope, [target(all[3]!)])).observations.get(all[3]!.serviceId)).toMatchObject({ phase: 'scaled' });
    // The API server refuses what the schema does not declare (server-side apply is strict).
    const typo = await k.request(
      'PATCH',
      `/apis/apps/v1/namespaces/${objectsNs}/deployments/typo?fieldManager=pier-compute`,
      JSON.stringify({ ...desiredObjects(all[0]!).apply[0], metadata: { name: 'typo', namespace: objectsNs }, spec: { replicaz: 1 } }),
      'application/apply-patch+yaml',
    );
    // Answered 500, though the request is at fault: the adapter must not read it as an outage.
    expect(typo.status).toBe(500);
    expect(typo.body.message).toMatch(/\.spec\.replicaz: field not declared in schema/);
    expect(kubernetesError({ code: typo.status, body: JSON.stringify(typo.body) }, 'apply Deployment/typo')).toBeInstanceOf(WorkloadRejectedError);
    // Its pods (the disk worker's too, now that the default StorageClass binds its claim) would
    // hold the node's CPU while the other files run: gone as soon as they were checked.
    await k.deleteNamespace(objectsNs);
    namespaces.delete(objectsNs);
  });

  it('admits every kind of service pod under the Pod Security Standard restricted it enforces, and refuses a root pod', async () => {
    // Control plane only: Pod Security Admission judges a pod when it is created (a dry run here).
    const vpc = randomUUID();
    const securedNs = vpcNamespace(vpc);
    namespaces.add(securedNs);
    const scope = { workspaceId, vpcId: vpc };
    const kinds = [
      workloadSpec(scope, { name: 'web', health_check_path: '/healthz' }, [], TINY_HTTP),
      workloadSpec(scope, { name: 'low', port: 80 }, [], TINY_HTTP),
      workloadSpec(scope, { name: 'disk', service_type: 'worker', disk_size_gb: 1, disk_mount_path: '/data', run_as_user: 1001 }, [], TINY_HTTP),
      workloadSpec(scope, { name: 'nightly', service_type: 'cron', cron_schedule: '0 3 * * *' }, [], TINY_HTTP),
    ];
    for (const s of kinds) await cluster.apply(s);
    expect((await k.get(`/api/v1/namespaces/${securedNs}`)).metadata.labels['pod-security.kubernetes.io/enforce']).toBe('restricted');
    const egress = await k.get(`/apis/networking.k8s.io/v1/namespaces/${securedNs}/networkpolicies/pier-vpc-egress`);
    expect(notStoredAsSent(egressPolicyManifest(scope).spec, egress.spec)).toEqual([]);
    const dryRunPod = (name: string, spec: Record<string, any>) =>
      k.request('POST', `/api/v1/namespaces/${securedNs}/pods?dryRun=All`, { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec });
    for (const s of kinds) {
      const m = desiredObjects(s).apply.find((o) => o.kind === 'Deployment' || o.kind === 'CronJob')! as Record<string, any>;
      const template = m.kind === 'CronJob' ? m.spec.jobTemplate.spec.template : m.spec.template;
      const res = await dryRunPod(`${s.serviceName}-pod`, template.spec);
      expect(res.status, `${s.serviceName}: ${JSON.stringify(res.body.message)}`).toBe(201);
    }
    // The standard is enforced: the same pod as root is refused.
    const web = desiredObjects(kinds[0]!).apply.find((o) => o.kind === 'Deployment')! as Record<string, any>;
    const root = await dryRunPod('as-root', { ...web.spec.template.spec, securityContext: { ...web.spec.template.spec.securityContext, runAsUser: 0 } });
    expect(root.status).toBe(403);
    expect(root.body.message).toMatch(/violates PodSecurity "restricted/);
    await k.deleteNamespace(securedNs);
    namespaces.delete(securedNs);
  });

  it('runs a web service as real pods of pier/tiny-http:1: ready from the watched pods (no list), answering HTTP', async () => {
    k.requireNode();
    const s = spec({ name: 'hello', health_check_path: '/healthz' });
    await cluster.apply(s);
    const seen = await until(
      () => observe(s),
      (o) => o.phase === 'ready' || o.phase === 'failed',
      120_000,
      500,
    );
    expect(seen).toMatchObject({ phase: 'ready', readyReplicas: 1 });
    const { calls } = await cluster.observeMany({ workspaceId, vpcId }, [target(s)]);
    expect(calls).toBe(0);
    const [pod] = await livePods(ns, s.serviceId);
    expect(pod!.status.phase).toBe('Running');
    expect(pod!.spec.containers[0].image).toBe(TINY_HTTP);
    expect(pod!.metadata.labels['pier.dev/deployment']).toBe(s.deploymentId);
    // Host to pod over the node's bridge (no kube-proxy here: pod IPs, not the ClusterIP).
    expect(await httpGet(`http://${pod!.status.podIP}:8080/healthz`)).toMatchObject({ status: 200 });
  }, 150000);

  it('reads a crash-looping container as failed, with the reason the kubelet gives', async () => {
    k.requireNode();
    const s = spec({ name: 'crasher', service_type: 'worker' }, [], EXITS);
    await cluster.apply(s);
    const seen = await until(
      () => observe(s),
      (o) => o.phase === 'failed',
      120_000,
      500,
    );
    // Between restarts the kubelet reports the container terminated (or, at times, waiting in CrashLoopBackOff).
    expect(seen.message).toMatch(/exited with code 1 \(Error\)|CrashLoopBackOff/);
    await cluster.delete(s);
  }, 150000);

  it("says why a pod no node fits is pending: the scheduler's reason", async () => {
    k.requireNode();
    // 4 CPUs asked of a 2-CPU node.
    const s = spec({ name: 'too-big', service_type: 'worker', instance_type: 'svc.xlarge' });
    await cluster.apply(s);
    const seen = await until(
      () => observe(s),
      (o) => /cannot be scheduled/.test(o.message ?? ''),
      60_000,
      500,
    );
    expect(seen.phase).toBe('progressing');
    expect(seen.message).toMatch(/cannot be scheduled: 0\/1 nodes are available: .*Insufficient cpu/);
    await cluster.delete(s);
  }, 90_000);

  it('reads a container killed on the node as failed until it has run again for a while', async () => {
    k.requireNode();
    const s = spec({ name: 'victim', service_type: 'worker' });
    await cluster.apply(s);
    await until(
      () => observe(s),
      (o) => o.phase === 'ready',
      120_000,
      500,
    );
    const [pod] = await livePods(ns, s.serviceId);
    // Kill the container's process the way the OOM killer or a node problem would: on the node, not through the API.
    await k.killContainer(pod!.status.containerStatuses[0].containerID);
    const seen = await until(
      () => observe(s),
      (o) => o.phase !== 'ready',
      30_000,
      200,
    );
    expect(seen).toMatchObject({ phase: 'failed', message: expect.stringMatching(/exited with code 137/) });
    // The kubelet restarts it; once it has kept running it is ready again.
    await until(
      () => observe(s),
      (o) => o.phase === 'ready',
      60_000,
      500,
    );
    await cluster.delete(s);
  }, 150000);

  it("fires the CronJob of a cron service as a real Job whose run is the service's state", async () => {
    k.requireNode();
    const ok = spec({ name: 'tick', service_type: 'cron', cron_schedule: '* * * * *' }, [{ key: 'EXIT_CODE', value: '0' }], EXITS);
    const bad = spec({ name: 'tock', service_type: 'cron', cron_schedule: '* * * * *' }, [{ key: 'EXIT_CODE', value: '3' }], EXITS);
    await cluster.apply(ok);
    await cluster.apply(bad);
    expect(await observe(ok)).toMatchObject({ phase: 'ready', readyReplicas: 0 }); // scheduled, no run yet
    // The CronJob controller starts a Job at the next minute.
    const okJobs = await until(
      () => k.list(`/apis/batch/v1/namespaces/${ns}/jobs`, `pier.dev/service=${ok.serviceId}`),
      (jobs) => jobs.some((j) => j.status?.succeeded === 1),
      150_000,
      1000,
    );
    expect(okJobs[0]!.metadata.ownerReferences[0]).toMatchObject({ kind: 'CronJob', name: 'tick' });
    expect(await observe(ok)).toMatchObject({ phase: 'ready' });
    const failed = await until(
      () => observe(bad),
      (o) => o.phase === 'failed',
      60_000,
      1000,
    );
    expect(failed.message).toMatch(/exit code 3/);
    await cluster.delete(ok);
    await cluster.delete(bad);
  }, 200000);

  it('scales an on_demand service to zero: no pod, scaled', async () => {
    const s = spec({ name: 'sleepy', deployment_mode: 'on_demand', min_replicas: 0, max_replicas: 2 });
    await cluster.apply(s);
    expect((await k.get(`/apis/apps/v1/namespaces/${ns}/deployments/sleepy`)).spec.replicas).toBe(0);
    expect(await observe(s)).toMatchObject({ phase: 'scaled' });
    expect(await podsOf(ns, s.serviceId)).toEqual([]);
    await cluster.delete(s);
  });
});

describe('compute and secrets on a real cluster', () => {
  let db: TestDatabase;
  let c: Compute;
  let secretsService: Awaited<ReturnType<typeof secrets.start>>;
  const VALUE = `k8s-real-${randomBytes(6).toString('hex')}`;

  beforeAll(async () => {
    k ??= realKubernetes();
    db = await createTestDatabase(infra().postgresAdminUrl);
    const keys = await generateIdentityKeys();
    const started = await startSecretsFor(db, keys, { PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: k.kubeconfig });
    secretsService = started.service;
    c = await startCompute({ PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: k.kubeconfig, ...started.computeEnv }, { db, keys });
    namespaces.add(vpcNamespace(c.vpcId));
  }, 60_000);

  afterAll(async () => {
    await c?.stop();
    await secretsService?.stop();
    await db?.drop();
  });

  const status = (id: string) => c.get(`${c.base}/${id}`).then((r) => r.body);
  const settle = (id: string, want: string) =>
    until(
      () => status(id),
      (s) => s.status === want || (s.status === 'crashed' && want !== 'crashed'),
      150_000,
      500,
    ).then((s) => {
      expect(s.status, s.status_message ?? '').toBe(want);
      return s;
    });
  /**
   * Waits until the service's only live pods are the deployment's, running; returns them.
   * The old ones may still be terminating (their 30 s grace period): they are on their way out.
   */
  const podsOfDeployment = (kns: string, serviceId: string, deploymentId: string) =>
    until(
      () => livePods(kns, serviceId),
      (pods) => pods.length > 0 && pods.every((p) => p.metadata.labels['pier.dev/deployment'] === deploymentId && p.status.phase === 'Running'),
      120_000,
      500,
    );

  it('creates, deploys, restarts and rolls back as real pods; a secret reference resolves in the pod only; deletes every object', async () => {
    k.requireNode();
    const kns = vpcNamespace(c.vpcId);
    const secretsApi = async (method: string, suffix: string, body?: unknown) => {
      const res = await fetch(`http://127.0.0.1:${secretsService.httpPort}/api/v1/workspaces/${c.workspaceId}/vpcs/${c.vpcId}/secrets${suffix}`, {
        method,
        headers: { [IDENTITY_HEADER]: await c.token('owner'), ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, body: res.status === 204 ? undefined : await res.json() };
    };
    const secret = await secretsApi('POST', '', { name: 'shop-db', values: { PASSWORD: VALUE } });
    expect(secret.status).toBe(201);
    const stored = await k.get(`/api/v1/namespaces/${kns}/secrets/${secretObjectName(secret.body.id)}`);
    expect(Buffer.from(stored.data.PASSWORD, 'base64').toString()).toBe(VALUE);

    const created = await c.post(c.base, { name: 'shop', image: TINY_HTTP, health_check_path: '/healthz' });
    expect(created.status).toBe(201);
    const id = created.body.id;
    await settle(id, 'running');
    const first = (await c.get(`${c.base}/${id}/deployments`)).body.items[0];
    const [p1] = await podsOfDeployment(kns, id, first.id);

    // A reference becomes a secretKeyRef; the kubelet resolves it into the container's environment.
    const put = await c.request('PUT', `${c.base}/${id}/env`, { variables: [{ key: 'DB_PASSWORD', secret_id: secret.body.id, secret_key: 'PASSWORD' }] });
    expect(put.status).toBe(200);
    await settle(id, 'running');
    const withEnv = (await c.get(`${c.base}/${id}/deployments`)).body.items[0];
    const [p2] = await podsOfDeployment(kns, id, withEnv.id);
    expect(p2!.metadata.name).not.toBe(p1!.metadata.name);
    expect(p2!.spec.containers[0].env).toEqual([
      { name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: secretObjectName(secret.body.id), key: 'PASSWORD' } } },
    ]);
    const env = await httpGet(`http://${p2!.status.podIP}:8080/cgi-bin/env`);
    expect(env.text).toContain(`DB_PASSWORD=${VALUE}`);
    const deployment = await k.get(`/apis/apps/v1/namespaces/${kns}/deployments/shop`);
    expect(JSON.stringify(deployment)).not.toContain(VALUE);
    const client = new pg.Client({ connectionString: db.adminUrl });
    await client.connect();
    const hits = await client.query(`select count(*)::int as n from compute.deployments d where d::text like $1`, [`%${VALUE}%`]);
    await client.end();
    expect(hits.rows[0].n).toBe(0);

    // Restart: the same image on new pods.
    const restart = await c.post(`${c.base}/${id}/restart`);
    expect(restart.status).toBe(202);
    await settle(id, 'running');
    const [p3] = await podsOfDeployment(kns, id, restart.body.deployment.id);
    expect(p3!.metadata.name).not.toBe(p2!.metadata.name);

    // Deploy another image, then roll back to the first deployment: each a rollout of real pods.
    const deploy = await c.post(`${c.base}/${id}/deploy`, { image_tag: EXITS });
    expect(deploy.status).toBe(202);
    await settle(id, 'crashed'); // pier/exits never stays up
    const rollback = await c.post(`${c.base}/${id}/rollback`, { deployment_id: withEnv.id });
    expect(rollback.status).toBe(202);
    expect(rollback.body.deployment).toMatchObject({ reason: 'rollback', rollback_of: withEnv.id, image: TINY_HTTP });
    await settle(id, 'running');
    const [p4] = await podsOfDeployment(kns, id, rollback.body.deployment.id);
    expect(p4!.spec.containers[0].image).toBe(TINY_HTTP);
    expect((await httpGet(`http://${p4!.status.podIP}:8080/cgi-bin/env`)).text).toContain(`DB_PASSWORD=${VALUE}`);

    // Delete: every object goes, the pods with them.
    expect((await c.request('DELETE', `${c.base}/${id}`)).status).toBe(202);
    await settle(id, 'deleted');
    expect((await k.request('GET', `/apis/apps/v1/namespaces/${kns}/deployments/shop`)).status).toBe(404);
    expect((await k.request('GET', `/api/v1/namespaces/${kns}/services/shop`)).status).toBe(404);
    await until(
      () => podsOf(kns, id),
      (pods) => pods.length === 0,
      90_000,
      500,
    );
  }, 420000);
});
