// The kubernetes adapter against an in-process fake of the Kubernetes API: every object
// it applies is validated (core kinds with kubernetes-models, CloudNativePG and MOCO
// resources with their CRD schemas), and the API on top of it behaves as on docker.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { vpcNamespace } from '@pier/kit';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import type { ClusterDatabase } from '../src/domain/cluster-port.ts';
import { FakeKubernetes, KINDS, restrictedViolations } from '@pier/testing';
import { startDatabases, type Databases } from './support.ts';
import { clusterDatabase as database } from './kubernetes-support.ts';

const DOMAINS = { postgresql: 'pg.example.com', mysql: 'my.example.com' };
/** The kinds the adapter applies, as the fake names them (apiVersion, kind). */
const K = {
  namespace: ['v1', 'Namespace'],
  secret: ['v1', 'Secret'],
  service: ['v1', 'Service'],
  job: ['batch/v1', 'Job'],
  cluster: ['postgresql.cnpg.io/v1', 'Cluster'],
  pooler: ['postgresql.cnpg.io/v1', 'Pooler'],
  mysql: ['moco.cybozu.com/v1beta2', 'MySQLCluster'],
} as const;
let fake: FakeKubernetes;
let cluster: KubernetesCluster;

function adapter(installation?: string): KubernetesCluster {
  const kc = new KubeConfig();
  kc.loadFromString(fake.kubeconfig());
  return new KubernetesCluster(kc, { installation, domains: DOMAINS, storageClass: 'fast', timeoutMs: 2000 });
}

beforeAll(async () => {
  // Every apply must come from the adapter's own field manager.
  fake = await new FakeKubernetes({ fieldManager: 'pier-databases' }).start();
  cluster = adapter();
});
afterAll(async () => {
  await fake.stop();
});
afterEach(() => {
  expect(fake.invalid).toEqual([]);
});

describe('the fake API server', () => {
  it('refuses what the real one would (its validation is not vacuous)', () => {
    const check = (kind: string, obj: Record<string, unknown>) => () => KINDS.find((k) => k.kind === kind)!.validate(obj);
    const meta = { name: 'x', namespace: 'n' };
    expect(check('Cluster', { apiVersion: 'postgresql.cnpg.io/v1', kind: 'Cluster', metadata: meta, spec: { instances: 'one' } })).toThrow();
    expect(
      check('Cluster', { apiVersion: 'postgresql.cnpg.io/v1', kind: 'Cluster', metadata: meta, spec: { instances: 1, postgresql: { pg_hbaa: [] } } }),
    ).toThrow(/additional/);
    expect(check('MySQLCluster', { apiVersion: 'moco.cybozu.com/v1beta2', kind: 'MySQLCluster', metadata: meta, spec: { replicas: 1 } })).toThrow(
      /podTemplate/,
    );
    expect(check('Job', { apiVersion: 'batch/v1', kind: 'Job', metadata: meta, spec: { template: { spec: { containers: [{ image: 'x' }] } } } })).toThrow();
    expect(check('Secret', { apiVersion: 'v1', kind: 'Secret', metadata: meta, stringData: { a: 1 } })).toThrow();
  });
});

describe('postgresql on CloudNativePG', () => {
  it('applies a Cluster, credentials Secrets and a read-write Pooler', async () => {
    const db = database();
    await cluster.apply(db);
    const ns = vpcNamespace(db.vpcId);
    const c = fake.get(...K.cluster, ns, `db-${db.shortId}`)!;
    expect(c.spec).toMatchObject({
      instances: 1,
      imageName: 'ghcr.io/cloudnative-pg/postgresql:16.10',
      storage: { size: '20Gi', storageClass: 'fast' },
      resources: { limits: { cpu: '1000m', memory: '1024Mi' } },
      bootstrap: { initdb: { database: db.shortId, owner: `app_${db.shortId}`, secret: { name: `db-${db.shortId}-app` } } },
    });
    expect(c.spec.postgresql.pg_hba.at(-1)).toBe('host all all all reject');
    expect(c.spec.postgresql.pg_hba).not.toContain('host all all 0.0.0.0/0 scram-sha-256');
    expect(fake.get(...K.pooler, ns, `db-${db.shortId}-pooler-rw`)!.spec).toMatchObject({ type: 'rw', cluster: { name: `db-${db.shortId}` } });
    expect(fake.get(...K.pooler, ns, `db-${db.shortId}-pooler-ro`)).toBeUndefined();
    expect(fake.get(...K.namespace, undefined, ns)).toBeDefined();

    const conn = await cluster.connection(db);
    expect(conn.endpoints).toMatchObject({
      host: `db-${db.shortId}-rw.${ns}.svc`,
      readOnlyHost: `db-${db.shortId}-r.${ns}.svc`,
      poolerHost: `db-${db.shortId}-pooler-rw.${ns}.svc`,
      port: 5432,
    });
    expect(conn.credentials.username).toBe(`app_${db.shortId}`);
    expect(conn.credentials.password).toMatch(/^[0-9a-f]{48}$/);
    // The password is read from the Secret each time: what is there now is what is live.
    fake.get(...K.secret, ns, `db-${db.shortId}-app`)!.data.password = Buffer.from('rotated').toString('base64');
    expect((await cluster.connection(db)).credentials.password).toBe('rotated');
    // Re-applying never regenerates credentials.
    await cluster.apply(db);
    expect((await cluster.connection(db)).credentials.password).toBe('rotated');
    expect(await cluster.sqlTarget(db)).toMatchObject({ user: 'pier_console', app: { user: `app_${db.shortId}` }, database: db.shortId });
  });

  it('reads status from the Cluster in one list call per kind', async () => {
    const vpcId = randomUUID();
    const dbs = [database({ vpcId }), database({ vpcId }), database({ vpcId, engine: 'mysql', version: '8.4', replicas: 1 })];
    for (const db of dbs) await cluster.apply(db);
    const before = fake.requests.length;
    let seen = await cluster.observe(vpcId, [...dbs.map((d) => d.id), randomUUID()]);
    const lists = fake.requests.slice(before);
    expect(lists.map((r) => r.method)).toEqual(['GET', 'GET', 'GET']);
    expect(
      lists.every((r) => new URLSearchParams(r.query).get('labelSelector') === 'app.kubernetes.io/managed-by=pier,app.kubernetes.io/component=database'),
    ).toBe(true);
    expect([...seen.values()].map((o) => o.phase)).toEqual(['starting', 'starting', 'starting', 'absent']);

    const ns = vpcNamespace(vpcId);
    fake.setStatus(...K.cluster, ns, `db-${dbs[0]!.shortId}`, { phase: 'Cluster in healthy state', readyInstances: 1 });
    fake.setStatus(...K.cluster, ns, `db-${dbs[1]!.shortId}`, { phase: 'Unable to create required cluster objects' });
    seen = await cluster.observe(
      vpcId,
      dbs.map((d) => d.id),
    );
    expect(seen.get(dbs[0]!.id)).toEqual({ phase: 'ready' });
    expect(seen.get(dbs[1]!.id)).toMatchObject({ phase: 'failed', reason: 'Unable to create required cluster objects' });
  });

  it('exposes it externally through LoadBalancers restricted to the allowlist', async () => {
    const db = database({ replicas: 2, externalAccessEnabled: true, allowlist: ['203.0.113.0/24'] });
    await cluster.apply(db);
    const ns = vpcNamespace(db.vpcId);
    expect(fake.get(...K.cluster, ns, `db-${db.shortId}`)!.spec.instances).toBe(3);
    expect(fake.get(...K.pooler, ns, `db-${db.shortId}-pooler-ro`)!.spec.type).toBe('ro');
    const svc = fake.get(...K.service, ns, `db-${db.shortId}-external`)!;
    expect(svc.metadata.annotations).toEqual({ 'external-dns.alpha.kubernetes.io/hostname': `${db.shortId}.pg.example.com` });
    expect(svc.spec).toMatchObject({
      type: 'LoadBalancer',
      externalTrafficPolicy: 'Local',
      loadBalancerSourceRanges: ['203.0.113.0/24'],
      ports: [{ port: 5432 }],
    });
    expect(fake.get(...K.service, ns, `db-${db.shortId}-external-ro`)!.metadata.annotations['external-dns.alpha.kubernetes.io/hostname']).toBe(
      `${db.shortId}-ro.pg.example.com`,
    );
    expect(fake.get(...K.cluster, ns, `db-${db.shortId}`)!.spec.postgresql.pg_hba).toContain('host all all 203.0.113.0/24 scram-sha-256');
    const conn = await cluster.connection(db);
    expect(conn.endpoints).toMatchObject({
      externalPort: 5432,
      readOnlyHost: `db-${db.shortId}-ro.${ns}.svc`,
      poolerHostRo: `db-${db.shortId}-pooler-ro.${ns}.svc`,
    });

    await cluster.apply({ ...db, externalAccessEnabled: false, replicas: 0 });
    expect(fake.get(...K.service, ns, `db-${db.shortId}-external`)).toBeUndefined();
    expect(fake.get(...K.pooler, ns, `db-${db.shortId}-pooler-ro`)).toBeUndefined();
  });

  it('without an external domain, gives the addresses of the load balancers once the cloud assigns them', async () => {
    const kc = new KubeConfig();
    kc.loadFromString(fake.kubeconfig());
    const plain = new KubernetesCluster(kc, { domains: {}, storageClass: 'fast', timeoutMs: 2000 });
    const db = database({ externalAccessEnabled: true });
    await plain.apply(db);
    const ns = vpcNamespace(db.vpcId);
    // No domain, nothing for external-dns to publish.
    expect(fake.get(...K.service, ns, `db-${db.shortId}-external`)!.metadata.annotations).toBeUndefined();
    expect((await plain.connection(db)).endpoints.externalAddress).toBeUndefined();
    fake.setStatus(...K.service, ns, `db-${db.shortId}-external`, { loadBalancer: { ingress: [{ ip: '203.0.113.10' }] } });
    fake.setStatus(...K.service, ns, `db-${db.shortId}-external-ro`, { loadBalancer: { ingress: [{ hostname: 'ro.lb.example.net' }] } });
    expect((await plain.connection(db)).endpoints).toMatchObject({
      externalPort: 5432,
      externalAddress: '203.0.113.10',
      externalAddressRo: 'ro.lb.example.net',
    });
  });

  it('deletes everything it made', async () => {
    const db = database({ externalAccessEnabled: true });
    await cluster.apply(db);
    await cluster.delete(db);
    await cluster.delete(db); // idempotent
    const ns = vpcNamespace(db.vpcId);
    expect([...fake.objects.keys()].filter((k) => k.includes(`/${ns}/`))).toEqual([]);
    expect((await cluster.observe(db.vpcId, [db.id])).get(db.id)).toEqual({ phase: 'absent' });
  });

  it("lists only its installation's databases, in every namespace, whatever kinds are left", async () => {
    const installation = randomUUID();
    const mine = adapter(installation);
    const pg = database();
    const my = database({ engine: 'mysql', version: '8.4', replicas: 1 });
    await mine.apply(pg);
    await mine.apply(my);
    await adapter(randomUUID()).apply(database()); // another installation's
    await cluster.apply(database()); // unlabelled: never listed
    const byId = (refs: { id: string }[]) => [...refs].sort((a, b) => a.id.localeCompare(b.id));
    const want = (d: ClusterDatabase) => ({ id: d.id, shortId: d.shortId, vpcId: d.vpcId, engine: d.engine });
    expect(byId(await mine.list())).toEqual(byId([want(pg), want(my)]));
    // What a crash between two objects leaves (a Secret without its Cluster) is listed too.
    fake.objects.delete(`${K.cluster.join('/')}/${vpcNamespace(pg.vpcId)}/db-${pg.shortId}`);
    expect(byId(await mine.list())).toEqual(byId([want(pg), want(my)]));
    for (const d of [pg, my]) await mine.delete(d);
    expect(await mine.list()).toEqual([]);
    expect(await cluster.list()).toEqual([]);
  });
});

describe('mysql on MOCO', () => {
  it('applies a MySQLCluster and the Job that creates the database and users', async () => {
    const db = database({ engine: 'mysql', version: '8.4', replicas: 3, externalAccessEnabled: true });
    await cluster.apply(db);
    const ns = vpcNamespace(db.vpcId);
    const m = fake.get(...K.mysql, ns, `db-${db.shortId}`)!;
    expect(m.spec).toMatchObject({ replicas: 3, podTemplate: { spec: { containers: [{ name: 'mysqld', image: 'ghcr.io/cybozu-go/moco/mysql:8.4.6' }] } } });
    expect(m.spec.volumeClaimTemplates[0]).toMatchObject({
      metadata: { name: 'mysql-data' },
      spec: { resources: { requests: { storage: '20Gi' } }, storageClassName: 'fast' },
    });
    const job = fake.get(...K.job, ns, `db-${db.shortId}-init`)!;
    // The VPC namespace enforces the Pod Security Standard `restricted` (compute's pods meet it too).
    expect(fake.get(...K.namespace, undefined, ns)!.metadata.labels['pod-security.kubernetes.io/enforce']).toBe('restricted');
    expect(restrictedViolations(job.spec.template.spec)).toEqual([]);
    expect(job.spec.template.spec.containers[0].command[2]).toContain(`CREATE DATABASE IF NOT EXISTS \\\`${db.shortId}\\\``);
    expect(job.spec.template.spec.containers[0].env.map((e: { valueFrom: { secretKeyRef: { name: string } } }) => e.valueFrom.secretKeyRef.name)).toEqual([
      `moco-db-${db.shortId}`,
      `db-${db.shortId}-app`,
      `db-${db.shortId}-console`,
    ]);
    expect(fake.get(...K.service, ns, `db-${db.shortId}-external`)!.spec.selector).toEqual({
      'app.kubernetes.io/name': 'mysql',
      'app.kubernetes.io/instance': `db-${db.shortId}`,
      'moco.cybozu.com/role': 'primary',
    });
    const conn = await cluster.connection(db);
    expect(conn.endpoints).toMatchObject({
      host: `moco-db-${db.shortId}-primary.${ns}.svc`,
      readOnlyHost: `moco-db-${db.shortId}-replica.${ns}.svc`,
      port: 3306,
      externalPort: 3306,
    });
    expect(conn.endpoints.poolerHost).toBeUndefined();

    const seen = () => cluster.observe(db.vpcId, [db.id]).then((s) => s.get(db.id));
    fake.setStatus(...K.mysql, ns, `db-${db.shortId}`, { conditions: [{ type: 'Available', status: 'True' }] });
    expect((await seen())!.phase).toBe('starting'); // the init Job has not finished
    fake.setStatus(...K.job, ns, `db-${db.shortId}-init`, { succeeded: 1 });
    expect(await seen()).toEqual({ phase: 'ready' });
    fake.setStatus(...K.job, ns, `db-${db.shortId}-init`, { failed: 61, conditions: [{ type: 'Failed', status: 'True', message: 'BackoffLimitExceeded' }] });
    expect(await seen()).toMatchObject({ phase: 'failed', reason: expect.stringContaining('BackoffLimitExceeded') });
  });
});

describe('the API on the kubernetes adapter', () => {
  let h: Databases;
  beforeAll(async () => {
    h = await startDatabases(
      { PIER_POSTGRES_EXTERNAL_DOMAIN: DOMAINS.postgresql, PIER_MYSQL_EXTERNAL_DOMAIN: DOMAINS.mysql },
      { cluster: (installation) => adapter(installation) },
    );
  });
  afterAll(async () => {
    await h.stop();
  });

  it('validates against what the operators run, provisions, resyncs and deletes', async () => {
    expect((await h.request('POST', h.base, { name: 'x', postgres_version: '12' })).body.field).toBe('postgres_version');
    expect((await h.request('POST', h.base, { name: 'x', engine: 'mysql', replicas: 7 })).body.field).toBe('replicas');
    const res = await h.request('POST', h.base, { name: 'k8s', replicas: 1 });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ status: 'creating', postgres_version: '16', replicas: 1 });
    const ns = vpcNamespace(h.vpcId);
    const name = `db-${res.body.short_id}`;
    expect((await h.request('GET', `${h.base}/${res.body.id}`)).body.status).toBe('creating');
    fake.setStatus(...K.cluster, ns, name, { phase: 'Cluster in healthy state', readyInstances: 2 });
    expect((await h.request('GET', `${h.base}/${res.body.id}`)).body.status).toBe('running');

    const conn = await h.request('GET', `${h.base}/${res.body.id}/connection`);
    expect(conn.body).toMatchObject({ host: `${name}-rw.${ns}.svc`, read_only_host: `${name}-ro.${ns}.svc`, external_url: null });
    const ext = await h.request('PATCH', `${h.base}/${res.body.id}`, { external_access_enabled: true });
    expect(ext.status).toBe(200);
    const rule = await h.request('POST', `${h.base}/${res.body.id}/ip-allowlist`, { cidr: '198.51.100.7' });
    expect(rule.status).toBe(201);
    // Found by schemathesis: U+0000 in the description reached the INSERT and came back 500.
    const nul = await h.request('POST', `${h.base}/${res.body.id}/ip-allowlist`, { cidr: '198.51.100.8', description: 'a\u0000b' });
    expect(nul.status).toBe(400);
    expect(nul.body).toEqual({ error: 'description: must not contain NUL characters (U+0000)', code: 'invalid_request', field: 'description' });
    expect((await h.request('GET', `${h.base}/${res.body.id}/ip-allowlist`)).body.items).toHaveLength(1);
    expect(fake.get(...K.service, ns, `${name}-external`)!.spec.loadBalancerSourceRanges).toEqual(['198.51.100.7/32']);
    // The list pages like every other (it always answered next_cursor: null).
    for (const cidr of ['198.51.100.9', '198.51.100.10']) expect((await h.request('POST', `${h.base}/${res.body.id}/ip-allowlist`, { cidr })).status).toBe(201);
    const first = (await h.request('GET', `${h.base}/${res.body.id}/ip-allowlist?limit=2`)).body;
    expect(first.items.map((r: { cidr: string }) => r.cidr)).toEqual(['198.51.100.7/32', '198.51.100.9/32']);
    const second = (await h.request('GET', `${h.base}/${res.body.id}/ip-allowlist?limit=2&cursor=${first.next_cursor}`)).body;
    expect(second).toEqual({ items: [expect.objectContaining({ cidr: '198.51.100.10/32' })], next_cursor: null });
    expect((await h.request('GET', `${h.base}/${res.body.id}/ip-allowlist?limit=0`)).status).toBe(400);
    const c = (await h.request('GET', `${h.base}/${res.body.id}/connection`)).body;
    expect(c.external_url).toBe(`postgresql://app_${res.body.short_id}:${c.password}@${res.body.short_id}.${DOMAINS.postgresql}:5432/${res.body.short_id}`);

    expect((await h.request('DELETE', `${h.base}/${res.body.id}`)).status).toBe(202);
    for (let i = 0; i < 40 && (await h.request('GET', `${h.base}/${res.body.id}`)).status !== 404; i++) await new Promise((r) => setTimeout(r, 50));
    expect((await h.request('GET', `${h.base}/${res.body.id}`)).status).toBe(404);
    expect(fake.get(...K.cluster, ns, name)).toBeUndefined();
  });

  it('answers 503 and writes nothing when the API server is down', async () => {
    const down = new FakeKubernetes();
    await down.start();
    await down.stop(); // a port that no longer answers
    const kc = new KubeConfig();
    kc.loadFromString(down.kubeconfig());
    const h2 = await startDatabases({}, { cluster: (installation) => new KubernetesCluster(kc, { installation, domains: DOMAINS, timeoutMs: 1000 }) });
    try {
      const res = await h2.request('POST', h2.base, { name: 'nope' });
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('cluster_unavailable');
      expect((await h2.request('GET', h2.base)).body.items).toEqual([]);
    } finally {
      await h2.stop();
    }
  });

  it('answers an API server refusal as 503 cluster_error with its reason, never a 500, and writes nothing', async () => {
    // Another field manager owns the objects: every apply is refused (422), as a webhook or a quota would.
    const refusing = await new FakeKubernetes({ fieldManager: 'someone-else' }).start();
    const kc = new KubeConfig();
    kc.loadFromString(refusing.kubeconfig());
    const h2 = await startDatabases({}, { cluster: (installation) => new KubernetesCluster(kc, { installation, domains: DOMAINS, timeoutMs: 2000 }) });
    try {
      const res = await h2.request('POST', h2.base, { name: 'refused' });
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('cluster_error');
      expect(res.body.error).toMatch(/kubernetes refused .*422/);
      expect((await h2.request('GET', h2.base)).body.items).toEqual([]);
    } finally {
      await h2.stop();
      await refusing.stop();
    }
  });
});
