// The kubernetes adapter against the in-process fake of the Kubernetes API (@pier/kit/testing),
// every object it sends validated against the Kubernetes schemas, its calls timed for
// /metrics; then compute and the secrets service both on that fake, through compute's HTTP API.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import pg from 'pg';
import { createLogger, generateIdentityKeys, IDENTITY_HEADER, secretObjectName, vpcNamespace, UnavailableError } from '@pier/kit';
import { createTestDatabase, FakeKubernetes, infra, restrictedViolations } from '@pier/testing';
import type * as secrets from '@pier/secrets';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import { operationOf } from '../src/cluster/call-metrics.ts';
import {
  NON_PUBLIC_RANGES,
  POD_SECURITY_ENFORCE,
  desiredObjects,
  egressPolicyManifest,
  namespaceManifest,
  networkPolicyManifest,
} from '../src/cluster/kubernetes-manifests.ts';
import { WorkloadRejectedError } from '../src/domain/cluster-port.ts';
import type { WorkloadSpec } from '../src/domain/cluster-port.ts';
import type { CreateServiceInput } from '../src/domain/services/service-config.ts';
import type { EnvEntry } from '../src/domain/env/env-input.ts';
import { startCompute, startSecretsFor, until, type Compute, type TestDatabase } from './support.ts';
import { target, workloadSpec } from './workload-spec.ts';

const log = createLogger('test', 'warn');
let fake: FakeKubernetes;
let kubeconfig: string;
let cluster: KubernetesCluster;
const workspaceId = randomUUID();
const vpcId = randomUUID();
const ns = vpcNamespace(vpcId);

beforeAll(async () => {
  fake = await new FakeKubernetes().start();
  kubeconfig = await fake.writeKubeconfig();
  cluster = KubernetesCluster.fromKubeconfig(kubeconfig, log);
});

afterAll(async () => {
  await fake?.stop();
  if (kubeconfig) await rm(path.dirname(kubeconfig), { recursive: true, force: true });
});

const spec = (input: CreateServiceInput, env: EnvEntry[] = [], image?: string) => workloadSpec({ workspaceId, vpcId }, input, env, image);

const observe = async (s: WorkloadSpec) => (await cluster.observeMany({ workspaceId, vpcId }, [target(s)])).observations.get(s.serviceId)!;

/** What the fake holds, without what the API server adds (uid, resourceVersion, ...). */
function stored(apiVersion: string, kind: string, name: string) {
  const o = fake.get(apiVersion, kind, kind === 'Namespace' ? undefined : ns, name);
  if (!o) return undefined;
  const { uid: _uid, resourceVersion: _rv, generation: _generation, creationTimestamp: _created, ...metadata } = o.metadata;
  const { status: _status, ...rest } = o;
  return { ...rest, metadata };
}

describe('kubernetes adapter', () => {
  it('applies a web service as namespace, network policy, Deployment and Service, exactly as built and valid', async () => {
    const s = spec({ name: 'api', health_check_path: '/healthz', instance_type: 'svc.small', run_as_user: 1001, command: ['/app'], args: ['--serve'] }, [
      { key: 'MODE', value: 'prod' },
      { key: 'DB_PASSWORD', secret_id: '6f1c1a52-7d2e-4a8e-9d55-1f6f3d7d8a10', secret_key: 'PASSWORD' },
    ]);
    await cluster.apply(s);
    expect(fake.invalid).toEqual([]);
    for (const m of [namespaceManifest(s), networkPolicyManifest(s), egressPolicyManifest(s), ...desiredObjects(s).apply]) {
      expect(stored(m.apiVersion, m.kind, m.metadata.name), `${m.kind} as sent`).toEqual(m);
    }
    expect(fake.get('v1', 'Namespace', undefined, ns)?.metadata.labels['pier.dev/vpc']).toBe(vpcId);
    const policy = fake.get('networking.k8s.io/v1', 'NetworkPolicy', ns, 'pier-vpc-isolation')!;
    expect(policy.spec.ingress[0].from[0]).toEqual({ podSelector: {} });

    const d = fake.get('apps/v1', 'Deployment', ns, 'api')!;
    expect(d.spec.replicas).toBe(1);
    const pod = d.spec.template.spec;
    const c = pod.containers[0];
    expect(c).toMatchObject({
      image: 'registry.example/app:v1',
      command: ['/app'],
      args: ['--serve'],
      ports: [{ containerPort: 8080, name: 'http', protocol: 'TCP' }],
    });
    expect(c.resources).toEqual({ requests: { cpu: '1000m', memory: '1024Mi' }, limits: { cpu: '1000m', memory: '1024Mi' } });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/healthz', port: 8080 });
    expect(pod.securityContext.runAsUser).toBe(1001);
    expect(c.env).toEqual([
      { name: 'MODE', value: 'prod' },
      { name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: secretObjectName('6f1c1a52-7d2e-4a8e-9d55-1f6f3d7d8a10'), key: 'PASSWORD' } } },
    ]);
    expect(fake.get('v1', 'Service', ns, 'api')!.spec.ports).toEqual([{ name: 'http', port: 8080, targetPort: 8080, protocol: 'TCP' }]);
    expect(fake.get('autoscaling/v2', 'HorizontalPodAutoscaler', ns, 'api')).toBeUndefined();
    // Server-side apply with our field manager, never a read-modify-write.
    expect(fake.requests.filter((r) => r.method === 'PATCH').every((r) => r.query.includes('fieldManager=pier-compute'))).toBe(true);
  });

  it("applies a VPC's namespace and policies once for several services created in a row, not once per service", async () => {
    const fresh = KubernetesCluster.fromKubeconfig(kubeconfig, log);
    const other = { workspaceId, vpcId: randomUUID() };
    const vpcObjects = () => fake.requests.filter((r) => r.method === 'PATCH' && /\/(namespaces|networkpolicies)\/[^/]+$/.test(r.path)).length;
    const before = vpcObjects();
    // What a create does: the VPC, then the service's objects.
    for (const name of ['one', 'two', 'three']) {
      await fresh.ensureVpc(other);
      await fresh.apply(workloadSpec(other, { name, image: 'registry.example/app:v1', port: 8080 }, []));
    }
    expect(vpcObjects() - before).toBe(3);
    expect(fake.get('v1', 'Namespace', undefined, vpcNamespace(other.vpcId))).toBeDefined();
  });

  it('runs every kind of pod under the Pod Security Standard restricted, which the namespace enforces', async () => {
    const kinds = [
      spec({ name: 'sec-web', health_check_path: '/healthz', run_as_user: 1001 }),
      spec({ name: 'sec-low', port: 80 }),
      spec({ name: 'sec-worker', service_type: 'worker', command: ['/bin/sh'], args: ['-c', 'sleep 1d'] }),
      spec({ name: 'sec-cron', service_type: 'cron', cron_schedule: '*/5 * * * *' }),
      spec({ name: 'sec-disk', service_type: 'worker', disk_size_gb: 1, disk_mount_path: '/data', run_as_user: 4321 }),
    ];
    for (const s of kinds) await cluster.apply(s);
    expect(fake.invalid).toEqual([]);
    expect(fake.get('v1', 'Namespace', undefined, ns)!.metadata.labels[POD_SECURITY_ENFORCE]).toBe('restricted');
    const pods = [
      ...['sec-web', 'sec-low', 'sec-worker', 'sec-disk'].map((n) => [n, fake.get('apps/v1', 'Deployment', ns, n)!.spec.template.spec] as const),
      ['sec-cron', fake.get('batch/v1', 'CronJob', ns, 'sec-cron')!.spec.jobTemplate.spec.template.spec] as const,
    ];
    for (const [name, pod] of pods) {
      expect(restrictedViolations(pod), name).toEqual([]);
      expect(pod.containers[0].securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    }
    // A port under 1024 with no capability: the pod's own network namespace lets the user bind it.
    expect(pods[1]![1].securityContext.sysctls).toEqual([{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }]);
    expect(pods[0]![1].securityContext).toEqual({ runAsUser: 1001, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
  });

  it('refuses run_as_user 0 (restricted admits no root pod) before writing any object of the service', async () => {
    const root = spec({ name: 'as-root', run_as_user: 0 });
    const err = await cluster.apply(root).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkloadRejectedError);
    expect((err as Error).message).toMatch(/run_as_user 0 \(root\) cannot run on this cluster: .*restricted/);
    expect(fake.get('apps/v1', 'Deployment', ns, 'as-root')).toBeUndefined();
  });

  it('lets service pods reach their VPC, DNS and public addresses only: never link-local, private or node addresses', async () => {
    const s = spec({ name: 'egress', service_type: 'worker' });
    await cluster.ensureVpc(s);
    const policy = fake.get('networking.k8s.io/v1', 'NetworkPolicy', ns, 'pier-vpc-egress')!;
    expect(policy.spec.podSelector).toEqual({ matchLabels: { 'app.kubernetes.io/managed-by': 'pier', 'pier.dev/kind': 'service' } });
    expect(policy.spec.policyTypes).toEqual(['Egress']);
    expect(policy.spec.egress).toEqual([
      { to: [{ podSelector: {} }] },
      {
        to: [{ namespaceSelector: {} }],
        ports: [
          { protocol: 'UDP', port: 53 },
          { protocol: 'TCP', port: 53 },
        ],
      },
      { to: [{ ipBlock: { cidr: '0.0.0.0/0', except: NON_PUBLIC_RANGES } }] },
    ]);
    // The metadata address, the node and cluster ranges, loopback: all outside what the policy allows.
    for (const range of ['169.254.0.0/16', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '127.0.0.0/8', '100.64.0.0/10'])
      expect(NON_PUBLIC_RANGES).toContain(range);
  });

  it('reads live state from pods in one request per VPC: ready, crash-looping, image missing, secret missing', async () => {
    const ok = spec({ name: 'ok', service_type: 'worker' });
    const crash = spec({ name: 'crash', service_type: 'worker' }, [], 'registry.example/crash:1');
    const missing = spec({ name: 'missing', service_type: 'worker' }, [], 'registry.example/nope:1');
    const secret = spec({ name: 'needs-secret', service_type: 'worker' }, [{ key: 'X', secret_id: randomUUID(), secret_key: 'K' }]);
    fake.crashingImages.add('registry.example/crash:1');
    fake.missingImages.add('registry.example/nope:1');
    for (const s of [ok, crash, missing, secret]) await cluster.apply(s);

    const before = fake.requests.length;
    const { observations, calls } = await cluster.observeMany({ workspaceId, vpcId }, [ok, crash, missing, secret].map(target));
    expect(calls).toBe(1);
    expect(fake.requests.slice(before).filter((r) => !/^\/api\/v1$/.test(r.path))).toEqual([
      { method: 'GET', path: `/api/v1/namespaces/${ns}/pods`, query: expect.stringContaining('labelSelector=') },
    ]);
    expect(observations.get(ok.serviceId)).toMatchObject({ phase: 'ready', readyReplicas: 1 });
    expect(observations.get(crash.serviceId)).toMatchObject({ phase: 'failed', message: expect.stringContaining('exited with code 1 (Error)') });
    expect(observations.get(missing.serviceId)).toMatchObject({ phase: 'failed', message: expect.stringContaining('ErrImagePull') });
    expect(observations.get(secret.serviceId)).toMatchObject({
      phase: 'failed',
      message: expect.stringMatching(/CreateContainerConfigError: secret "pier-secret-.*" not found/),
    });
  });

  it('adds an autoscaler for max_replicas and leaves the replica count to it', async () => {
    const s = spec({ name: 'scaler', min_replicas: 2, max_replicas: 5 });
    await cluster.apply(s);
    const hpa = fake.get('autoscaling/v2', 'HorizontalPodAutoscaler', ns, 'scaler')!;
    expect(hpa.spec).toMatchObject({ minReplicas: 2, maxReplicas: 5, scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'scaler' } });
    expect(fake.get('apps/v1', 'Deployment', ns, 'scaler')!.spec.replicas).toBeUndefined();
    expect(await observe(s)).toMatchObject({ phase: 'ready', readyReplicas: 2 });
    // Dropping max_replicas removes the autoscaler.
    await cluster.apply({ ...s, deploymentId: randomUUID(), config: { ...s.config, max_replicas: null } });
    expect(fake.get('autoscaling/v2', 'HorizontalPodAutoscaler', ns, 'scaler')).toBeUndefined();
    expect(fake.invalid).toEqual([]);
  });

  it('writes no autoscaler for a service whose replicas the elastic controller chooses (scaled on its requests)', async () => {
    const s = { ...spec({ name: 'counted', min_replicas: 1, max_replicas: 4, target_concurrency: 5 }), replicas: 2 };
    await cluster.apply({ ...s, replicas: undefined });
    expect(fake.get('autoscaling/v2', 'HorizontalPodAutoscaler', ns, 'counted')).toBeDefined();
    // Taken over by the controller: its count, and the HPA that would fight it removed.
    await cluster.apply(s);
    expect(fake.get('apps/v1', 'Deployment', ns, 'counted')!.spec.replicas).toBe(2);
    expect(fake.get('autoscaling/v2', 'HorizontalPodAutoscaler', ns, 'counted')).toBeUndefined();
    expect(fake.invalid).toEqual([]);
  });

  it('claims a volume for a disk and mounts it, recreating rather than rolling', async () => {
    const s = spec({ name: 'db-ish', disk_size_gb: 5, disk_mount_path: '/data' });
    await cluster.apply(s);
    expect(fake.get('v1', 'PersistentVolumeClaim', ns, 'db-ish-disk')!.spec).toEqual({
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '5Gi' } },
    });
    const d = fake.get('apps/v1', 'Deployment', ns, 'db-ish')!;
    expect(d.spec.strategy).toEqual({ type: 'Recreate' });
    expect(d.spec.template.spec.volumes).toEqual([{ name: 'disk', persistentVolumeClaim: { claimName: 'db-ish-disk' } }]);
    expect(d.spec.template.spec.containers[0].volumeMounts).toEqual([{ name: 'disk', mountPath: '/data' }]);
    expect(d.spec.template.spec.securityContext).toEqual({ runAsUser: 1000, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' }, fsGroup: 1000 });
  });

  it('runs a cron service as a CronJob, its state from the last run; switching type removes the Deployment and Service', async () => {
    const web = spec({ name: 'nightly' });
    await cluster.apply(web);
    const cron = { ...spec({ name: 'nightly', service_type: 'cron', cron_schedule: '0 3 * * *' }), serviceId: web.serviceId };
    await cluster.apply(cron);
    expect(fake.get('apps/v1', 'Deployment', ns, 'nightly')).toBeUndefined();
    expect(fake.get('v1', 'Service', ns, 'nightly')).toBeUndefined();
    const job = fake.get('batch/v1', 'CronJob', ns, 'nightly')!;
    expect(job.spec).toMatchObject({ schedule: '0 3 * * *', concurrencyPolicy: 'Forbid', timeZone: 'Etc/UTC' });
    expect(job.spec.jobTemplate.spec.template.spec.restartPolicy).toBe('Never');
    expect(await observe(cron)).toMatchObject({ phase: 'ready' }); // scheduled, no run yet
    fake.runCronJob(ns, 'nightly');
    expect(await observe(cron)).toMatchObject({ phase: 'ready' });
    fake.crashingImages.add(cron.image);
    fake.runCronJob(ns, 'nightly');
    expect(await observe(cron)).toMatchObject({ phase: 'failed', message: expect.stringContaining('exit code 1') });
    fake.crashingImages.delete(cron.image);
    expect(fake.invalid).toEqual([]);
  });

  it('scales an on_demand service to zero: scaled', async () => {
    const s = spec({ name: 'idle', deployment_mode: 'on_demand', min_replicas: 0, max_replicas: 3 });
    await cluster.apply(s);
    expect(fake.get('apps/v1', 'Deployment', ns, 'idle')!.spec.replicas).toBe(0);
    expect(await observe(s)).toMatchObject({ phase: 'scaled' });
  });

  it('deletes every object of a service; deleting again succeeds', async () => {
    const s = spec({ name: 'gone', disk_size_gb: 1, disk_mount_path: '/d', max_replicas: 1 });
    await cluster.apply(s);
    await cluster.delete(s);
    for (const [v, k, n] of [
      ['apps/v1', 'Deployment', 'gone'],
      ['v1', 'Service', 'gone'],
      ['v1', 'PersistentVolumeClaim', 'gone-disk'],
    ] as const) {
      expect(fake.get(v, k, ns, n)).toBeUndefined();
    }
    expect(fake.list('Pod', ns).filter((p) => p.metadata.labels['pier.dev/service'] === s.serviceId)).toEqual([]);
    await cluster.delete(s);
    expect(await observe(s)).toMatchObject({ phase: 'absent' });
  });

  it('reports an unreachable API server as unavailable', async () => {
    const closed = await new FakeKubernetes().start();
    await closed.stop();
    const file = await closed.writeKubeconfig(); // its port no longer answers
    const away = KubernetesCluster.fromKubeconfig(file, log);
    await expect(away.ping()).rejects.toBeInstanceOf(UnavailableError);
    await expect(away.apply(spec({ name: 'x' }))).rejects.toBeInstanceOf(UnavailableError);
    await expect(away.observeMany({ workspaceId, vpcId }, [])).rejects.toBeInstanceOf(UnavailableError);
    await rm(path.dirname(file), { recursive: true, force: true });
  });
});

describe('cluster call metrics', () => {
  it('labels an operation without the object it names', () => {
    expect(operationOf('apply Deployment/web-1f2e')).toBe('apply Deployment');
    expect(operationOf('container create')).toBe('container create');
  });

  it('times each API call by operation and outcome', async () => {
    const seen: { operation: string; outcome: string; seconds: number }[] = [];
    const timed = KubernetesCluster.fromKubeconfig(kubeconfig, log, (operation, outcome, seconds) => seen.push({ operation, outcome, seconds }));
    const vpc = randomUUID();
    await timed.ping();
    await timed.ensureVpc({ workspaceId, vpcId: vpc });
    expect(seen[0]).toMatchObject({ operation: 'version', outcome: 'ok' });
    expect(seen.map((s) => s.operation)).toContain('apply Namespace');
    expect(seen.every((s) => s.outcome === 'ok' && s.seconds >= 0)).toBe(true);
    expect(seen.some((s) => s.operation.includes(vpc) || s.operation.includes('/'))).toBe(false);

    const closed = await new FakeKubernetes().start();
    await closed.stop();
    const file = await closed.writeKubeconfig(); // its port no longer answers
    const failed: string[] = [];
    const away = KubernetesCluster.fromKubeconfig(file, log, (operation, outcome) => failed.push(`${operation}:${outcome}`));
    await expect(away.ping()).rejects.toBeInstanceOf(UnavailableError);
    expect(failed).toEqual(['version:error']);
    await rm(path.dirname(file), { recursive: true, force: true });
  });
});

describe('compute and secrets on kubernetes', () => {
  let db: TestDatabase;
  let c: Compute;
  let secretsService: Awaited<ReturnType<typeof secrets.start>>;
  let storeDir: string;
  const VALUE = `k8s-${randomBytes(6).toString('hex')}`;

  beforeAll(async () => {
    const { postgresAdminUrl: postgres } = infra();
    db = await createTestDatabase(postgres);
    const keys = await generateIdentityKeys();
    storeDir = await mkdtemp(path.join(os.tmpdir(), 'pier-secrets-'));
    const started = await startSecretsFor(db, keys, { PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: kubeconfig });
    secretsService = started.service;
    c = await startCompute({ PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: kubeconfig, ...started.computeEnv }, { db, keys });
  }, 60_000);

  afterAll(async () => {
    await c?.stop();
    await secretsService?.stop();
    await db?.drop();
    await rm(storeDir, { recursive: true, force: true });
  });

  const status = (id: string) => c.get(`${c.base}/${id}`).then((r) => r.body);

  it('creates, runs, references a secret by secretKeyRef only, fails a rollout once the secret is gone, and deletes', async () => {
    const kns = vpcNamespace(c.vpcId);
    const created = await c.post(c.base, { name: 'shop', image: 'registry.example/shop:1', health_check_path: '/healthz' });
    expect(created.status).toBe(201);
    const id = created.body.id;
    await until(
      () => status(id),
      (s) => s.status === 'running',
    );
    const list = await c.get(c.base);
    expect(list.headers.get('x-pier-cluster-calls')).toBe('1');

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
    expect(fake.get('v1', 'Secret', kns, secretObjectName(secret.body.id))).toBeDefined();

    const put = await c.request('PUT', `${c.base}/${id}/env`, { variables: [{ key: 'DB_PASSWORD', secret_id: secret.body.id, secret_key: 'PASSWORD' }] });
    expect(put.status).toBe(200);
    await until(
      () => status(id),
      (s) => s.status === 'running',
    );
    const d = fake.get('apps/v1', 'Deployment', kns, 'shop')!;
    expect(d.spec.template.spec.containers[0].env).toEqual([
      { name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: secretObjectName(secret.body.id), key: 'PASSWORD' } } },
    ]);
    expect(JSON.stringify(fake.received.filter((b) => b.kind !== 'Secret'))).not.toContain(VALUE);
    expect(JSON.stringify(fake.received.filter((b) => b.kind !== 'Secret'))).not.toContain(Buffer.from(VALUE).toString('base64'));

    expect((await secretsApi('DELETE', `/${secret.body.id}`)).status).toBe(204);
    const restart = await c.post(`${c.base}/${id}/restart`);
    expect(restart.body.deployment).toMatchObject({ status: 'failed', message: expect.stringMatching(/missing secret/) });
    expect((await status(id)).status).toBe('crashed');

    const client = new pg.Client({ connectionString: db.adminUrl });
    await client.connect();
    const hits = await client.query(`select count(*)::int as n from compute.deployments d where d::text like $1`, [`%${VALUE}%`]);
    await client.end();
    expect(hits.rows[0].n).toBe(0);

    expect((await c.request('DELETE', `${c.base}/${id}`)).status).toBe(202);
    await until(
      () => status(id),
      (s) => s.status === 'deleted',
    );
    expect(fake.get('apps/v1', 'Deployment', kns, 'shop')).toBeUndefined();
    expect(fake.get('v1', 'Service', kns, 'shop')).toBeUndefined();
    expect(fake.invalid).toEqual([]);
  });

  it('sweeps away a workload no record accounts for, and rolls back none of the services that match their records', async () => {
    const kns = vpcNamespace(c.vpcId);
    const kept = await c.post(c.base, { name: 'kept', image: 'registry.example/kept:1' });
    expect(kept.status).toBe(201);
    await until(
      () => status(kept.body.id),
      (s) => s.status === 'running',
    );
    const patchesOfKept = () => fake.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith('/deployments/kept')).length;
    const before = patchesOfKept();
    // A workload of a service this compute never made (in our VPC's namespace, with our labels).
    await cluster.apply(workloadSpec({ workspaceId: c.workspaceId, vpcId: c.vpcId }, { name: 'stray', image: 'registry.example/stray:1' }));
    // What was sent, not what is stored: the sweep (every 5 s here, support.ts) may take it at once.
    expect(fake.received.some((o) => o.kind === 'Deployment' && o.metadata.name === 'stray')).toBe(true);
    await until(
      async () => fake.get('apps/v1', 'Deployment', kns, 'stray'),
      (d) => d === undefined,
      20_000,
    );
    expect(patchesOfKept()).toBe(before);
    expect((await status(kept.body.id)).status).toBe('running');
  });

  it('applies again the workload of a running service that was removed outside Pier', async () => {
    const kns = vpcNamespace(c.vpcId);
    const created = await c.post(c.base, { name: 'removed', image: 'registry.example/removed:1', service_type: 'worker' });
    expect(created.status).toBe(201);
    await until(
      () => status(created.body.id),
      (s) => s.status === 'running',
    );
    const deployment = fake.get('apps/v1', 'Deployment', kns, 'removed')!;
    // Deleted by hand (kubectl delete deployment): its pods go with it.
    const res = await fetch(`${fake.url}/apis/apps/v1/namespaces/${kns}/deployments/removed`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${fake.token}` },
    });
    expect(res.status).toBe(200);
    expect(fake.list('Pod', kns).filter((p) => p.metadata.labels?.['pier.dev/service'] === created.body.id)).toEqual([]);
    // The sweep (every 5 s here) applies the current deployment again, as it was.
    const back = await until(
      async () => fake.get('apps/v1', 'Deployment', kns, 'removed'),
      (d) => d !== undefined,
      20_000,
    );
    expect(back!.spec.template).toEqual(deployment.spec.template);
    await until(
      () => status(created.body.id),
      (s) => s.status === 'running',
    );
  });

  it('records a crash that nobody reads: the sweep moves a running service to crashed and writes its event', async () => {
    const image = `registry.example/falls-over-${randomBytes(3).toString('hex')}:1`;
    const created = await c.post(c.base, { name: 'unwatched', image, service_type: 'worker' });
    expect(created.status).toBe(201);
    await until(
      () => status(created.body.id),
      (s) => s.status === 'running',
    );
    fake.crashingImages.add(image);
    fake.refreshPods();
    // Read from the database only: an API read would refresh the status itself.
    const client = new pg.Client({ connectionString: c.db.adminUrl });
    await client.connect();
    try {
      const row = await until(
        async () => (await client.query('select status from compute.services where id = $1', [created.body.id])).rows[0],
        (r) => r.status === 'crashed',
        20_000,
      );
      expect(row.status).toBe('crashed');
      const event = await client.query("select payload from compute.outbox where kind = 'service.status_changed' and payload->>'resource_id' = $1", [
        created.body.id,
      ]);
      expect(event.rows.map((r) => r.payload.data.to)).toContain('crashed');
    } finally {
      await client.end();
    }
  });

  it('answers 503 and writes nothing when the API server cannot be reached', async () => {
    const closed = await new FakeKubernetes().start();
    await closed.stop();
    const file = await closed.writeKubeconfig(); // its port no longer answers
    const away = await startCompute({ PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: file });
    try {
      const res = await away.post(away.base, { name: 'nowhere', image: 'registry.example/x:1' });
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('cluster_unavailable');
      const client = new pg.Client({ connectionString: away.db.adminUrl });
      await client.connect();
      const n = await client.query('select count(*)::int as n from compute.services');
      await client.end();
      expect(n.rows[0].n).toBe(0);
    } finally {
      await away.stop();
      await rm(path.dirname(file), { recursive: true, force: true });
    }
  });
});
