// The built-in kubernetes mode (PIER_DATABASES_KUBERNETES_OPERATOR=none) on the REAL
// single-node cluster of ./pier test: the databases service runs PostgreSQL and MariaDB
// there from Pier's own images, and real clients use them as a tenant would.
//   - inside: a pod in the VPC's namespace connects by `database_url` (cluster DNS);
//   - outside: psql and mysql on this host, and psql in a network namespace of its own (a
//     remote client's address, which the allowlist judges), dial the `external_url` (a
//     NodePort on the node's address, externalTrafficPolicy Local keeps that address);
//   - backups and the WAL / binary-log archive go to the S3 test server (versitygw),
//     which the pods reach on this machine's address; restore, point in time and fork
//     read them back into new databases;
//   - a replica serves `read_only_url` and `external_url_ro`, and refuses writes.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { restrictedPodSecurity, vpcNamespace } from '@pier/kit';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { machineAddress, mysqlCli, psql, realKubernetes, type RealKubernetes } from '@pier/testing';
import { PodCommands } from '../src/cluster/kubernetes-pods.ts';
import { BuiltinKubernetesCluster } from '../src/cluster/kubernetes-builtin.ts';
import type { ClusterDatabase } from '../src/domain/cluster-port.ts';
import { databaseChecks, startDatabases, until, type Databases } from './support.ts';
import { startS3Server, type S3Server } from './s3-server.ts';

const run = promisify(execFile);
const BUCKET = 'pier-kube-backups';
/** The test cluster's pod network (deploy/kube/cluster.sh POD_CIDR): clients there are inside. */
const POD_NETWORK = '10.88.0.0/16';

let k: RealKubernetes;
let s3: S3Server;
let h: Databases;
let pods: PodCommands;
let checks: ReturnType<typeof databaseChecks>;
let outside: OutsideClient;
const one = (id: string) => checks.one(id);

beforeAll(async () => {
  k = realKubernetes();
  k.requireNode();
  s3 = await startS3Server(BUCKET, machineAddress());
  const caFile = path.join(await mkdtemp(path.join(tmpdir(), 'pier-s3-')), 'ca.pem');
  await writeFile(caFile, s3.store.caPem!);
  h = await startDatabases({
    PIER_CLUSTER: 'kubernetes',
    PIER_KUBECONFIG: k.kubeconfig,
    PIER_DATABASES_KUBERNETES_OPERATOR: 'none',
    PIER_DATABASES_KUBERNETES_EXTERNAL_SERVICE: 'NodePort',
    PIER_DATABASES_KUBERNETES_CLUSTER_NETWORKS: POD_NETWORK,
    PIER_DATABASES_BACKUP_S3_ENDPOINT: `https://${s3.store.host}:${s3.store.port}`,
    PIER_DATABASES_BACKUP_S3_BUCKET: BUCKET,
    PIER_DATABASES_BACKUP_S3_ACCESS_KEY_ID: s3.store.accessKeyId,
    PIER_DATABASES_BACKUP_S3_SECRET_ACCESS_KEY: s3.store.secretAccessKey,
    PIER_DATABASES_BACKUP_S3_CA_FILE: caFile,
    PIER_DATABASES_PROVISION_TIMEOUT_SECONDS: '300',
  });
  checks = databaseChecks(h);
  pods = new PodCommands(kubeConfigFrom(k.kubeconfig));
  outside = new OutsideClient();
  await outside.start();
}, 180_000);

afterAll(async () => {
  await outside?.stop();
  await h?.stop();
  if (k && h) await k.deleteNamespace(vpcNamespace(h.vpcId));
  await s3?.stop();
}, 180_000);

/** A client in a pod of the VPC's namespace (the engine's image has both clients), as the VPC's services connect. */
async function inCluster(image: string, command: string[]): Promise<{ code: number; out: string }> {
  const name = `client-${Math.random().toString(16).slice(2, 8)}`;
  const pod: V1Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: vpcNamespace(h.vpcId) },
    spec: {
      restartPolicy: 'Never',
      securityContext: restrictedPodSecurity(100),
      containers: [
        {
          name: 'client',
          image,
          imagePullPolicy: 'IfNotPresent',
          command,
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
    },
  };
  const r = await pods.runToEnd(pod);
  return { code: r.exitCode, out: r.stdout.trim() };
}
const psqlInCluster = (url: string, sql: string) => inCluster('pier/pg-managed:15', ['psql', '-X', '-q', '-tA', '-d', url, '-c', sql]);
const mysqlInCluster = (url: string, sql: string) => {
  const u = new URL(url);
  const args = ['-h', u.hostname, '-P', u.port || '3306', '-u', decodeURIComponent(u.username), `-p${decodeURIComponent(u.password)}`, '-N', '-B'];
  return inCluster('pier/mariadb:10.11', ['mariadb', ...args, u.pathname.slice(1), '-e', sql]);
};

/**
 * A client outside the cluster: psql in a network namespace of its own, joined to this host
 * by a veth pair, at an address of TEST-NET-2. Its packets reach the node as a remote
 * client's would, unmasqueraded (a container on Docker's bridge would not do: Docker
 * masquerades what leaves its bridge, so the server would see the node's own address).
 */
class OutsideClient {
  readonly address: string;
  private readonly ns = `pier-client-${Math.random().toString(16).slice(2, 8)}`;
  private readonly link = `pc${this.ns.slice(-6)}`;
  private readonly block = 4 * Math.floor(Math.random() * 60);

  constructor() {
    this.address = `198.51.100.${this.block + 2}`;
  }

  async start(): Promise<void> {
    const host = `198.51.100.${this.block + 1}`;
    for (const cmd of [
      ['netns', 'add', this.ns],
      ['link', 'add', `${this.link}h`, 'type', 'veth', 'peer', 'name', `${this.link}c`],
      ['link', 'set', `${this.link}c`, 'netns', this.ns],
      ['addr', 'add', `${host}/30`, 'dev', `${this.link}h`],
      ['link', 'set', `${this.link}h`, 'up'],
      ['-n', this.ns, 'addr', 'add', `${this.address}/30`, 'dev', `${this.link}c`],
      ['-n', this.ns, 'link', 'set', `${this.link}c`, 'up'],
      ['-n', this.ns, 'route', 'add', 'default', 'via', host],
    ])
      await run('ip', cmd);
    // Forwarded as a node's own network would be (Docker's FORWARD policy here is DROP).
    await run('iptables', ['-I', 'FORWARD', '1', '-i', `${this.link}h`, '-j', 'ACCEPT']);
  }

  async psql(url: string, sql: string): Promise<{ code: number; out: string }> {
    try {
      const { stdout } = await run('ip', ['netns', 'exec', this.ns, 'psql', '-X', '-q', '-tA', '-d', url, '-c', sql]);
      return { code: 0, out: stdout.trim() };
    } catch (err) {
      const e = err as { code?: number; stderr?: string };
      return { code: e.code ?? 1, out: (e.stderr ?? '').trim() };
    }
  }

  async stop(): Promise<void> {
    await run('iptables', ['-D', 'FORWARD', '-i', `${this.link}h`, '-j', 'ACCEPT']).catch(() => undefined);
    await run('ip', ['netns', 'del', this.ns]).catch(() => undefined);
    await run('ip', ['link', 'del', `${this.link}h`]).catch(() => undefined);
  }
}

async function created(body: Record<string, unknown>): Promise<string> {
  const res = await h.post(h.base, body);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  await checks.running(res.body.id);
  return res.body.id;
}

async function completedBackup(id: string): Promise<any> {
  const res = await h.post(`${one(id)}/backups`, {});
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return checks.completed(id, res.body.name);
}

describe('databases run by Pier itself on a real cluster (no operator)', () => {
  it('postgresql: provisioned with a replica; reached inside by cluster DNS and outside by NodePort; the replica refuses writes', async () => {
    const started = Date.now();
    const id = await created({ name: 'orders', replicas: 1 });
    console.log(`kubernetes built-in: postgresql with a replica running in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const conn = (await h.get(`${one(id)}/connection`)).body;
    expect(conn.host).toMatch(/\.svc$/);
    expect((await psqlInCluster(conn.database_url, "create table t (v text); insert into t values ('one'); select count(*) from t")).out).toBe('1');
    const ro = await psqlInCluster(conn.read_only_url, "select pg_is_in_recovery(); insert into t values ('no')");
    expect(ro.code).not.toBe(0);
    const url = await checks.externalUrl(id);
    const details = (await h.get(`${one(id)}/connection`)).body;
    expect(url).toBe(details.external_url);
    // kube-proxy opens a new NodePort within moments of the change.
    expect(
      (
        await until(
          () => psql(url, 'select v from t'),
          (r) => r.code === 0,
          15_000,
        )
      ).stdout.trim(),
    ).toBe('one');
    const roOutside = await psql(details.external_url_ro, 'select pg_is_in_recovery()');
    expect(roOutside.stdout.trim()).toBe('t');
    expect((await psql(details.external_url_ro, "insert into t values ('no')")).code).not.toBe(0);

    // The allowlist, judged on the address of a client outside the pod network.
    const rule = await h.post(`${one(id)}/ip-allowlist`, { cidr: '203.0.113.0/24' });
    expect(rule.status, JSON.stringify(rule.body)).toBe(201);
    const refused = await outside.psql(url, 'select 1');
    expect(refused.code).not.toBe(0);
    expect(refused.out).toMatch(new RegExp(`no pg_hba\\.conf entry for host "${outside.address.replace(/\./g, '\\.')}"`));
    expect((await h.post(`${one(id)}/ip-allowlist`, { cidr: `${outside.address}/32` })).status).toBe(201);
    expect(await outside.psql(url, 'select count(*) from t')).toEqual({ code: 0, out: '1' });
    // Inside the cluster the allowlist does not apply.
    expect((await psqlInCluster(conn.database_url, 'select 1')).out).toBe('1');

    // The console and the schema browser.
    const q = await h.post(`${one(id)}/query`, { sql: 'select v from t' });
    expect(q.status, JSON.stringify(q.body)).toBe(200);
    expect(JSON.stringify(q.body)).toContain('one');
    const schema = await h.get(`${one(id)}/schema`);
    expect(JSON.stringify(schema.body)).toContain('"t"');

    // Backup → restore of it, and a point in time between two later rows; a fork.
    const backup = await completedBackup(id);
    expect((await psql(url, "insert into t values ('two')")).code).toBe(0);
    await new Promise((r) => setTimeout(r, 1100));
    const target = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 1100));
    expect((await psql(url, "insert into t values ('three')")).code).toBe(0);
    const fromBackup = await h.post(`${one(id)}/backups/restore`, { name: 'orders-then', backup_name: backup.name });
    expect(fromBackup.status, JSON.stringify(fromBackup.body)).toBe(202);
    const atTime = await h.post(`${one(id)}/backups/restore`, { name: 'orders-pitr', target_time: target });
    expect(atTime.status, JSON.stringify(atTime.body)).toBe(202);
    const fork = await h.post(`${one(id)}/fork`, { name: 'orders-fork' });
    expect(fork.status, JSON.stringify(fork.body)).toBe(202);
    for (const r of [fromBackup, atTime, fork]) await checks.running(r.body.id);
    const rows = async (db: string) => {
      const u = await checks.externalUrl(db);
      return (
        await until(
          () => psql(u, 'select v from t order by v'),
          (r) => r.code === 0,
          15_000,
        )
      ).stdout
        .trim()
        .split('\n');
    };
    expect(await rows(fromBackup.body.id)).toEqual(['one']);
    expect(await rows(atTime.body.id)).toEqual(['one', 'two']);
    // A fork starts from the newest backup, and is a database of its own from then on.
    expect(await rows(fork.body.id)).toEqual(['one']);
    expect((await psql(await checks.externalUrl(fork.body.id), "insert into t values ('fork only')")).code).toBe(0);
    expect((await psql(url, "insert into t values ('source only')")).code).toBe(0);
    expect(await rows(fork.body.id)).toEqual(['fork only', 'one']);
    expect(await rows(id)).toEqual(['one', 'source only', 'three', 'two']);

    // Into another VPC: the adapter makes the copy in that VPC's namespace, from the
    // source's place in the store (the API's fork to another VPC asks auth, absent here), at
    // the instant the API's point-in-time restore above sealed the archive past.
    const otherVpc = randomUUID();
    const adapter = new BuiltinKubernetesCluster(kubeConfigFrom(k.kubeconfig), {
      postgresImage: 'pier/pg-managed:15',
      mysqlImage: 'pier/mariadb:10.11',
      clusterNetworks: [POD_NETWORK],
      externalService: 'NodePort',
      domains: {},
      backupStore: { ...s3.store, prefix: 'pier-databases' },
    });
    const copyId = randomUUID();
    const copy: ClusterDatabase = {
      id: copyId,
      shortId: copyId.slice(0, 8),
      workspaceId: h.workspaceId,
      vpcId: otherVpc,
      engine: 'postgresql',
      version: '15',
      instanceType: 'svc.nano',
      storageGb: 1,
      replicas: 0,
      externalAccessEnabled: false,
      allowlist: [],
      restore: {
        source: { id, shortId: id.slice(0, 8), vpcId: h.vpcId, engine: 'postgresql' },
        backupName: backup.name,
        backupRef: null,
        targetTime: new Date(target),
      },
    };
    try {
      await adapter.apply(copy);
      const seen = await until(
        () => adapter.observe(otherVpc, [copyId]).then((m) => m.get(copyId)!),
        (o) => o.phase === 'ready' || o.phase === 'failed',
        180_000,
      );
      expect(seen).toEqual({ phase: 'ready' });
      const target = await adapter.sqlTarget(copy);
      const there = `postgresql://${target.app.user}:${target.app.password}@${target.host}:${target.port}/${target.database}`;
      // Ready, and its Service's endpoints may still be catching up (a refused connection): as rows() above.
      const read = await until(
        () => psql(there, 'select v from t order by v'),
        (r) => r.code === 0,
        15_000,
      );
      expect(read.stdout.trim().split('\n')).toEqual(['one', 'two']);
      await adapter.delete(copy);
    } finally {
      await k.deleteNamespace(vpcNamespace(otherVpc));
    }

    // A StatefulSet's volumes grow only where their StorageClass expands volumes; local-path does not.
    const grown = await h.request('PATCH', one(id), { storage_gb: 11 });
    expect(grown.status, JSON.stringify(grown.body)).toBe(409);
    expect(grown.body).toMatchObject({ code: 'storage_not_expandable', field: 'storage_gb' });
    expect((await h.get(one(id))).body.storage_gb).toBe(10);
    // The copies go (the node is shared with the other test files' pods).
    for (const r of [fromBackup, atTime, fork]) expect((await h.request('DELETE', one(r.body.id))).status).toBe(202);
  }, 900_000);

  it('mysql: three instances; the replicas follow by GTID and refuse writes; a backup comes back as a new database', async () => {
    const id = await created({ name: 'shop', engine: 'mysql', replicas: 3 });
    const conn = (await h.get(`${one(id)}/connection`)).body;
    expect((await mysqlInCluster(conn.database_url, "create table t (v varchar(10)); insert into t values ('one'); select count(*) from t")).out).toBe('1');
    const url = await checks.externalUrl(id);
    // kube-proxy opens a new NodePort within moments of the change.
    const outsideRead = await until(
      () => mysqlCli(url, 'select v from t'),
      (r) => r.code === 0,
      15_000,
    );
    expect(outsideRead.stdout.trim(), JSON.stringify(outsideRead)).toBe('one');
    const details = (await h.get(`${one(id)}/connection`)).body;
    await until(
      () => mysqlCli(details.external_url_ro, 'select count(*) from t').then((r) => r.stdout.trim()),
      (n) => n === '1',
      60_000,
    );
    expect((await mysqlCli(details.external_url_ro, "insert into t values ('no')")).code).not.toBe(0);
    // Back to one instance (the replicas' pods and volumes go) before a copy is made of it.
    const shrunk = await h.request('PATCH', `${one(id)}/replicas`, { replicas: 1 });
    expect(shrunk.status, JSON.stringify(shrunk.body)).toBe(202);
    await until(
      () => k.get(`/api/v1/namespaces/${vpcNamespace(h.vpcId)}/pods`).then((l) => (l.items as { metadata: { name: string } }[]).map((p) => p.metadata.name)),
      (names) => !names.some((n) => n.startsWith(`db-${id.slice(0, 8)}-replica`)),
      120_000,
    );
    await checks.running(id);
    const backup = await completedBackup(id);
    const restored = await h.post(`${one(id)}/backups/restore`, { name: 'shop-copy', backup_name: backup.name });
    expect(restored.status, JSON.stringify(restored.body)).toBe(202);
    await checks.running(restored.body.id);
    const restoredUrl = await checks.externalUrl(restored.body.id);
    expect(
      (
        await until(
          () => mysqlCli(restoredUrl, 'select v from t'),
          (r) => r.code === 0,
          15_000,
        )
      ).stdout.trim(),
    ).toBe('one');
  }, 900_000);

  it('a deleted database leaves nothing in the namespace but its backups in the store', async () => {
    const list = (await h.get(h.base)).body.items as { id: string }[];
    for (const d of list) expect((await h.request('DELETE', one(d.id))).status).toBe(202);
    await until(
      () => h.get(h.base).then((r) => (r.body.items as unknown[]).length),
      (n) => n === 0,
      120_000,
    );
    // The volumes go once their pods have stopped (the claims' protection finalizer).
    const claims = () => k.get(`/api/v1/namespaces/${vpcNamespace(h.vpcId)}/persistentvolumeclaims`).then((l) => l.items as unknown[]);
    expect(await until(claims, (items) => items.length === 0, 120_000)).toEqual([]);
    // Pods go after their grace period (a pooler's may still be terminating): what is left, until nothing is.
    const left = async () => {
      const objects = await Promise.all(['services', 'secrets', 'pods'].map((kind) => k.get(`/api/v1/namespaces/${vpcNamespace(h.vpcId)}/${kind}`)));
      return objects.flatMap((l) => (l.items as { metadata: { name: string } }[]).map((o) => o.metadata.name)).filter((n) => n.startsWith('db-'));
    };
    expect(await until(left, (names) => names.length === 0, 120_000)).toEqual([]);
    expect((await s3.objects.list('')).length).toBeGreaterThan(0);
  }, 300_000);
});
