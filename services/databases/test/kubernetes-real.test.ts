// The databases adapter on a REAL Kubernetes API server (deploy/kube/cluster.sh, started by
// ./pier test) with the CloudNativePG and MOCO CRDs of deploy/crds installed: every object a
// provision, a backup and a restore write is accepted by the API server itself (structural
// schemas, server-side field validation Strict: an unknown field is a 400, never pruned),
// and an invalid one is refused.
//
// Simulated elsewhere: the operators. Their Go modules are not served here, so nothing turns
// a Cluster into pods or sets its status: on this cluster the databases stay `starting`.
// Their status changes (healthy, failing, a restore's Job) are set by hand on the fake API
// server in kubernetes-cluster.test.ts and kubernetes-backups.test.ts (fake.setStatus).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { s3StoreFrom, vpcNamespace } from '@pier/kit';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { notStoredAsSent, realKubernetes, type RealKubernetes, type StrictWrites } from '@pier/testing';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import { checkReplicas } from '../src/domain/rules.ts';
import type { ClusterDatabase, ClusterRef } from '../src/domain/cluster-port.ts';
import { clusterDatabase as database } from './kubernetes-support.ts';

const CRDS = [
  'cloudnative-pg/postgresql.cnpg.io_clusters.yaml',
  'cloudnative-pg/postgresql.cnpg.io_poolers.yaml',
  'cloudnative-pg/postgresql.cnpg.io_backups.yaml',
  'cloudnative-pg/postgresql.cnpg.io_scheduledbackups.yaml',
  'moco/moco.cybozu.com_mysqlclusters.yaml',
  'moco/moco.cybozu.com_backuppolicies.yaml',
  'external-snapshotter-v8.7.0/snapshot.storage.k8s.io_volumesnapshots.yaml',
  'cert-manager-v1.21.2/cert-manager.io_certificates.yaml',
];
const DOMAINS = { postgresql: 'pg.example.com', mysql: 'my.example.com' };
const store = s3StoreFrom({
  endpoint: 'https://s3.example.com:9000',
  bucket: 'pier-backups',
  region: 'us-east-1',
  accessKeyId: 'AKIA-TEST',
  secretAccessKey: 'not-a-secret',
  prefix: 'pier',
});

let k: RealKubernetes;
let proxy: StrictWrites;
let cluster: KubernetesCluster;
const vpcId = randomUUID();
const ns = vpcNamespace(vpcId);

beforeAll(async () => {
  k = realKubernetes();
  await k.installCrds(CRDS);
  proxy = await k.strictWrites();
  cluster = new KubernetesCluster(kubeConfigFrom(proxy.kubeconfig), {
    installation: randomUUID(),
    domains: DOMAINS,
    storageClass: 'standard',
    backupStore: store,
  });
}, 60_000);

afterAll(async () => {
  await proxy?.stop();
  if (proxy) await rm(path.dirname(proxy.kubeconfig), { recursive: true, force: true });
  if (k) await k.deleteNamespace(ns);
});

const refOf = (db: ClusterDatabase): ClusterRef => ({ id: db.id, shortId: db.shortId, vpcId: db.vpcId, engine: db.engine });
/** Every write since `from`: all must have been accepted. */
function acceptedSince(from: number): { method: string; path: string; status: number; body: Record<string, any> }[] {
  const writes = proxy.writes.slice(from);
  expect(writes.filter((w) => w.status >= 300)).toEqual([]);
  return writes;
}
const kindsOf = (writes: { body: Record<string, any> }[]) => [...new Set(writes.map((w) => `${w.body.apiVersion}/${w.body.kind}`))].sort();
/** The object as the API server stored it. */
async function storedAs(w: { path: string; body: Record<string, any> }) {
  // A create POSTs to the collection; its object is the collection plus its name.
  const at = w.path.endsWith(`/${w.body.metadata.name}`) ? w.path : `${w.path}/${w.body.metadata.name}`;
  return k.get(at);
}

describe('the operators’ CRDs in the real API server', () => {
  it('refuse what their schemas do not allow, and what Strict validation calls unknown', async () => {
    const base = `/apis/postgresql.cnpg.io/v1/namespaces/default/clusters?dryRun=All&fieldValidation=Strict`;
    const cnpg = (spec: object) => ({ apiVersion: 'postgresql.cnpg.io/v1', kind: 'Cluster', metadata: { name: 'probe' }, spec });
    expect((await k.request('POST', base, cnpg({ instances: 1, storage: { size: '1Gi' } }))).status).toBe(201);
    const zero = await k.request('POST', base, cnpg({ instances: 0, storage: { size: '1Gi' } }));
    expect(zero.status).toBe(422);
    expect(zero.body.message).toMatch(/spec.instances/);
    const unknown = await k.request('POST', base, cnpg({ instances: 1, storage: { size: '1Gi' }, bogusField: true }));
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toMatch(/unknown field "spec.bogusField"/);

    const moco = `/apis/moco.cybozu.com/v1beta2/namespaces/default/mysqlclusters?dryRun=All&fieldValidation=Strict`;
    const wrong = await k.request('POST', moco, {
      apiVersion: 'moco.cybozu.com/v1beta2',
      kind: 'MySQLCluster',
      metadata: { name: 'probe' },
      spec: { replicas: 'three' },
    });
    expect(wrong.status).toBe(422);
    expect(wrong.body.message).toMatch(/spec.replicas/);
    expect(wrong.body.message).toMatch(/spec.podTemplate/);
  });

  it('let an even MOCO instance count through (MOCO’s webhook refuses it, not its schema), so Pier refuses it itself', async () => {
    const moco = `/apis/moco.cybozu.com/v1beta2/namespaces/default/mysqlclusters?dryRun=All&fieldValidation=Strict`;
    const even = await k.request('POST', moco, {
      apiVersion: 'moco.cybozu.com/v1beta2',
      kind: 'MySQLCluster',
      metadata: { name: 'probe' },
      spec: {
        replicas: 2,
        podTemplate: { spec: { containers: [{ name: 'mysqld', image: 'mysql' }] } },
        volumeClaimTemplates: [{ metadata: { name: 'mysql-data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
      },
    });
    expect(even.status).toBe(201);
    expect(() => checkReplicas('mysql', 2, cluster.capabilities)).toThrow(/odd/);
  });
});

describe('the databases adapter on the real API server', () => {
  it('postgresql: the Cluster, Poolers, Secrets and external Services of a provision are accepted, stored as sent', async () => {
    const from = proxy.writes.length;
    const db = database({ vpcId, replicas: 1, externalAccessEnabled: true, allowlist: ['203.0.113.0/24'] });
    await cluster.apply(db);
    const writes = acceptedSince(from);
    expect(kindsOf(writes)).toEqual(['postgresql.cnpg.io/v1/Cluster', 'postgresql.cnpg.io/v1/Pooler', 'v1/Namespace', 'v1/Secret', 'v1/Service']);
    // Nothing pruned: each custom resource reads back with every field it was sent.
    for (const w of writes.filter((x) => x.body.apiVersion === 'postgresql.cnpg.io/v1')) {
      expect(notStoredAsSent(w.body.spec, (await storedAs(w)).spec), `${w.body.kind}/${w.body.metadata.name}`).toEqual([]);
    }
    // Applying again converges (server-side apply, same field manager).
    await cluster.apply({ ...db, replicas: 0, externalAccessEnabled: false });
    acceptedSince(from);
    expect((await k.request('GET', `/apis/postgresql.cnpg.io/v1/namespaces/${ns}/poolers/db-${db.shortId}-pooler-ro`)).status).toBe(404);
    // No operator runs here: the Cluster has no status, and reads as starting.
    expect((await cluster.observe(vpcId, [db.id])).get(db.id)).toMatchObject({ phase: 'starting' });

    // A backup is a CloudNativePG Backup; a restore a Cluster bootstrapped from the repository, and the Job that renames its data.
    await cluster.startBackup(db, '20261125-060000', 'manual');
    const restored = database({
      vpcId,
      restore: { source: refOf(db), backupName: '20261125-060000', backupRef: null, targetTime: new Date('2026-11-25T06:30:00Z') },
    });
    await cluster.apply(restored);
    const all = acceptedSince(from);
    expect(kindsOf(all)).toEqual(expect.arrayContaining(['postgresql.cnpg.io/v1/Backup', 'batch/v1/Job']));
    for (const w of all.filter((x) => ['postgresql.cnpg.io/v1', 'batch/v1'].includes(x.body.apiVersion) && x.body.metadata.name.includes(restored.shortId))) {
      expect(notStoredAsSent(w.body.spec, (await storedAs(w)).spec), `${w.body.kind}/${w.body.metadata.name}`).toEqual([]);
    }

    await cluster.delete(db);
    await cluster.delete(restored);
    expect(await k.list(`/apis/postgresql.cnpg.io/v1/namespaces/${ns}/clusters`, `pier.dev/database-id=${db.id}`)).toEqual([]);
  });

  it('mysql: the MySQLCluster, BackupPolicy, ServiceAccount and init Job are accepted, stored as sent; a restore too', async () => {
    const from = proxy.writes.length;
    const db = database({ vpcId, engine: 'mysql', replicas: 3, externalAccessEnabled: true });
    await cluster.apply(db);
    const writes = acceptedSince(from);
    expect(kindsOf(writes)).toEqual([
      'batch/v1/Job',
      'moco.cybozu.com/v1beta2/BackupPolicy',
      'moco.cybozu.com/v1beta2/MySQLCluster',
      'v1/Namespace',
      'v1/Secret',
      'v1/Service',
      'v1/ServiceAccount',
    ]);
    for (const w of writes.filter((x) => x.body.apiVersion === 'moco.cybozu.com/v1beta2')) {
      expect(notStoredAsSent(w.body.spec, (await storedAs(w)).spec), `${w.body.kind}/${w.body.metadata.name}`).toEqual([]);
    }
    expect((await cluster.observe(vpcId, [db.id])).get(db.id)).toMatchObject({ phase: 'starting' });

    const restored = database({
      vpcId,
      engine: 'mysql',
      restore: { source: refOf(db), backupName: '20261125-060000', backupRef: '2026-11-25T06:00:42Z', targetTime: null },
    });
    await cluster.apply(restored);
    const all = acceptedSince(from);
    const mine = all.filter((w) => w.body.kind === 'MySQLCluster' && w.body.metadata.name.includes(restored.shortId));
    expect(mine).toHaveLength(1);
    expect(notStoredAsSent(mine[0]!.body.spec, (await storedAs(mine[0]!)).spec)).toEqual([]);

    await cluster.delete(db);
    await cluster.delete(restored);
    expect(await k.list(`/apis/moco.cybozu.com/v1beta2/namespaces/${ns}/mysqlclusters`, `pier.dev/database-id=${db.id}`)).toEqual([]);
  });
});
