// Backups, restores and forks on the kubernetes adapter: the objects it writes for
// CloudNativePG and MOCO against the fake Kubernetes API (every one validated against the
// CRD schemas and kubernetes-models), the listing read back from what the operators report
// (simulated here with status updates), and the deletions in the bucket against a real
// S3-compatible server (pier/s3-test, versitygw).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { vpcNamespace } from '@pier/kit';
import { FakeKubernetes, validateManifest } from '@pier/testing';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import type { S3Store } from '../src/cluster/backup-store.ts';
import type { ClusterDatabase, ClusterRef, RestoreSpec } from '../src/domain/cluster-port.ts';
import { startS3Server, type S3Server } from './s3-server.ts';
import { startDatabases, type Databases } from './support.ts';
import { clusterDatabase as database } from './kubernetes-support.ts';

const DOMAINS = { postgresql: 'pg.example.com', mysql: 'my.example.com' };
const CNPG = 'postgresql.cnpg.io/v1';
const MOCO = 'moco.cybozu.com/v1beta2';
const K = {
  secret: ['v1', 'Secret'],
  account: ['v1', 'ServiceAccount'],
  job: ['batch/v1', 'Job'],
  cronJob: ['batch/v1', 'CronJob'],
  cluster: [CNPG, 'Cluster'],
  backup: [CNPG, 'Backup'],
  mysql: [MOCO, 'MySQLCluster'],
  policy: [MOCO, 'BackupPolicy'],
} as const;

let fake: FakeKubernetes;
let s3: S3Server;
let store: S3Store;

/** The adapter with the test's store, another store, or none (null). */
function adapter(backupStore: S3Store | null = store, installation?: string): KubernetesCluster {
  const kc = new KubeConfig();
  kc.loadFromString(fake.kubeconfig());
  return new KubernetesCluster(kc, { installation, domains: DOMAINS, storageClass: 'fast', timeoutMs: 2000, backupStore: backupStore ?? undefined });
}

const refOf = (db: ClusterDatabase): ClusterRef => ({ id: db.id, shortId: db.shortId, vpcId: db.vpcId, engine: db.engine });

/** A database made from `source`'s backup, in the same VPC unless told otherwise. */
function restoredFrom(source: ClusterDatabase, restore: Partial<RestoreSpec>, over: Partial<ClusterDatabase> = {}): ClusterDatabase {
  return database({
    engine: source.engine,
    vpcId: source.vpcId,
    ...over,
    restore: { source: refOf(source), backupName: '20261125-060000', backupRef: null, targetTime: null, ...restore },
  });
}

const get = (kind: readonly [string, string], db: ClusterRef, name: string) => fake.get(kind[0], kind[1], vpcNamespace(db.vpcId), name);
const setStatus = (kind: readonly [string, string], db: ClusterRef, name: string, status: object) =>
  fake.setStatus(kind[0], kind[1], vpcNamespace(db.vpcId), name, status);
const seen = async (c: KubernetesCluster, db: ClusterDatabase) => (await c.observe(db.vpcId, [db.id])).get(db.id);

/**
 * The simulated MOCO operator: the CronJob it makes from a MySQLCluster's BackupPolicy
 * (controllers/mysqlcluster_controller.go, reconcileV1BackupJob), put into the fake as
 * MOCO would, since the fake runs no operator.
 */
function simulateMocoCronJob(db: ClusterDatabase): void {
  const policy = get(K.policy, db, `db-${db.shortId}-backup`)!;
  const jc = policy.spec.jobConfig;
  const labels = { 'app.kubernetes.io/name': 'mysql-backup', 'app.kubernetes.io/instance': `db-${db.shortId}`, 'app.kubernetes.io/created-by': 'moco' };
  const bc = jc.bucketConfig;
  const cron = {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name: `moco-backup-db-${db.shortId}`, namespace: vpcNamespace(db.vpcId), labels },
    spec: {
      schedule: policy.spec.schedule,
      concurrencyPolicy: 'Allow',
      jobTemplate: {
        metadata: { labels },
        spec: {
          template: {
            metadata: { labels },
            spec: {
              restartPolicy: 'Never',
              serviceAccountName: jc.serviceAccountName,
              volumes: [{ name: 'work', ...jc.workVolume }, ...(jc.volumes ?? [])],
              containers: [
                {
                  name: 'backup',
                  image: 'ghcr.io/cybozu-go/moco-backup:0.26.0',
                  args: [
                    'backup',
                    '--threads=4',
                    `--region=${bc.region}`,
                    `--endpoint=${bc.endpointURL}`,
                    '--use-path-style',
                    ...(bc.caCert ? [`--ca-cert=${bc.caCert}`] : []),
                    bc.bucketName,
                    vpcNamespace(db.vpcId),
                    `db-${db.shortId}`,
                  ],
                  env: [{ name: 'MYSQL_PASSWORD', valueFrom: { secretKeyRef: { name: `moco-db-${db.shortId}`, key: 'BACKUP_PASSWORD' } } }, ...jc.env],
                  volumeMounts: [{ name: 'work', mountPath: '/work' }, ...(jc.volumeMounts ?? [])],
                  securityContext: { readOnlyRootFilesystem: true },
                },
              ],
            },
          },
        },
      },
    },
  };
  validateManifest(cron);
  fake.seed(cron);
}

beforeAll(async () => {
  fake = await new FakeKubernetes({ fieldManager: 'pier-databases' }).start();
  s3 = await startS3Server();
  store = s3.store;
});
afterAll(async () => {
  await fake?.stop();
  await s3?.stop();
});
afterEach(() => {
  expect(fake.invalid).toEqual([]);
});

describe('without a backup store', () => {
  it('writes no backup configuration, and every backup method is a 409 naming the settings (a purge has nothing to do)', async () => {
    const plain = adapter(null);
    const pg = database();
    const my = database({ engine: 'mysql' });
    await plain.apply(pg);
    await plain.apply(my);
    expect(get(K.cluster, pg, `db-${pg.shortId}`)!.spec.backup).toBeUndefined();
    expect(get(K.mysql, my, `db-${my.shortId}`)!.spec.backupPolicyName).toBeUndefined();
    expect(get(K.policy, my, `db-${my.shortId}-backup`)).toBeUndefined();
    expect(get(K.account, my, `db-${my.shortId}-backup`)).toBeUndefined();
    expect(get(K.secret, pg, `db-${pg.shortId}-backup-store`)).toBeUndefined();

    const refused = {
      name: 'PierError',
      code: 'backups_unavailable',
      message: expect.stringMatching(/PIER_DATABASES_BACKUP_S3_ENDPOINT.*_BUCKET.*_ACCESS_KEY_ID.*_SECRET_ACCESS_KEY/),
    };
    for (const db of [pg, my]) {
      await expect(plain.startBackup(db, '20261125-060000', 'manual')).rejects.toMatchObject(refused);
      await expect(plain.listBackups(db)).rejects.toMatchObject(refused);
      await expect(plain.deleteBackup(db, { name: '20261125-060000', ref: 'x' })).rejects.toMatchObject(refused);
      // Nothing was ever written: a purge (of a deleted database past its retention) is done at once.
      await expect(plain.purgeBackups(db)).resolves.toBeUndefined();
      // Nor can anything be restored from where no backup can be.
      await expect(plain.apply(restoredFrom(db, { backupRef: 'x' }))).rejects.toMatchObject(refused);
    }
    expect(fake.list('Backup')).toEqual([]);
  });
});

describe('postgresql on CloudNativePG', () => {
  it('archives WAL to the store and takes every backup as an on-demand Backup, listed in one call', async () => {
    const k8s = adapter();
    const db = database();
    await k8s.apply(db);
    const secret = get(K.secret, db, `db-${db.shortId}-backup-store`)!;
    const decoded = Object.fromEntries(Object.entries(secret.data as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
    expect(decoded).toEqual({ ACCESS_KEY_ID: store.accessKeyId, ACCESS_SECRET_KEY: store.secretAccessKey, REGION: 'us-east-1', 'ca.crt': store.caPem });
    const c = get(K.cluster, db, `db-${db.shortId}`)!;
    const ref = { name: `db-${db.shortId}-backup-store` };
    expect(c.spec.backup).toEqual({
      barmanObjectStore: {
        destinationPath: `s3://pier-backups/pier/databases/${db.id}`,
        endpointURL: `https://127.0.0.1:${store.port}`,
        serverName: `db-${db.shortId}`,
        s3Credentials: {
          accessKeyId: { ...ref, key: 'ACCESS_KEY_ID' },
          secretAccessKey: { ...ref, key: 'ACCESS_SECRET_KEY' },
          region: { ...ref, key: 'REGION' },
        },
        endpointCA: { ...ref, key: 'ca.crt' },
        wal: { compression: 'gzip' },
        data: { compression: 'gzip' },
      },
    });
    // Pier's scheduler keeps the count: no time-based retention, no ScheduledBackup.
    expect(c.spec.backup.retentionPolicy).toBeUndefined();
    expect(fake.received.some((o) => o.kind === 'ScheduledBackup')).toBe(false);
    // The console role seals the archive for point-in-time restores.
    expect(c.spec.bootstrap.initdb.postInitApplicationSQL).toContain('GRANT EXECUTE ON FUNCTION pg_switch_wal() TO pier_console');

    await k8s.startBackup(db, '20261125-060000', 'scheduled');
    await k8s.startBackup(db, '20261125-060000', 'scheduled'); // the same name again does nothing
    await k8s.startBackup(db, '20261125-070000', 'manual');
    await k8s.startBackup(db, '20261125-080000', 'triggered');
    expect(fake.list('Backup', vpcNamespace(db.vpcId))).toHaveLength(3);
    const backup = get(K.backup, db, `db-${db.shortId}-backup-20261125-060000`)!;
    expect(backup.spec).toEqual({ cluster: { name: `db-${db.shortId}` }, method: 'barmanObjectStore' });
    expect(backup.metadata.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'pier',
      'pier.dev/database-id': db.id,
      'pier.dev/backup-name': '20261125-060000',
      'pier.dev/backup-method': 'scheduled',
    });

    // What CloudNativePG reports as the backups run.
    setStatus(K.backup, db, `db-${db.shortId}-backup-20261125-060000`, {
      phase: 'completed',
      backupId: '20261125T060001',
      startedAt: '2026-11-25T06:00:01Z',
      stoppedAt: '2026-11-25T06:00:42Z',
    });
    setStatus(K.backup, db, `db-${db.shortId}-backup-20261125-070000`, {
      phase: 'failed',
      startedAt: '2026-11-25T07:00:01Z',
      error: "can't upload: connection refused",
    });
    setStatus(K.backup, db, `db-${db.shortId}-backup-20261125-080000`, { phase: 'running', startedAt: '2026-11-25T08:00:01Z' });
    setStatus(K.cluster, db, `db-${db.shortId}`, { phase: 'Cluster in healthy state', conditions: [{ type: 'ContinuousArchiving', status: 'True' }] });

    const before = fake.requests.length;
    const listing = await k8s.listBackups(db);
    const calls = fake.requests.slice(before);
    expect(calls.map((r) => `${r.method} ${r.path}`).sort()).toEqual([
      `GET /apis/postgresql.cnpg.io/v1/namespaces/${vpcNamespace(db.vpcId)}/backups`,
      `GET /apis/postgresql.cnpg.io/v1/namespaces/${vpcNamespace(db.vpcId)}/clusters/db-${db.shortId}`,
    ]);
    expect(listing).toMatchObject({ readable: true, archiving: true, archivedUntil: null });
    const byName = new Map(listing.backups.map((b) => [b.name, b]));
    expect(byName.get('20261125-060000')).toEqual({
      name: '20261125-060000',
      method: 'scheduled',
      status: 'completed',
      ref: '20261125T060001',
      sizeBytes: null,
      startedAt: new Date('2026-11-25T06:00:01Z'),
      completedAt: new Date('2026-11-25T06:00:42Z'),
      error: null,
    });
    expect(byName.get('20261125-070000')).toMatchObject({ method: 'manual', status: 'failed', error: "can't upload: connection refused", ref: null });
    expect(byName.get('20261125-080000')).toMatchObject({ method: 'triggered', status: 'running', completedAt: null });

    setStatus(K.cluster, db, `db-${db.shortId}`, { phase: 'Cluster in healthy state', conditions: [{ type: 'ContinuousArchiving', status: 'False' }] });
    expect((await k8s.listBackups(db)).archiving).toBe(false);

    // Deleting the database keeps its backups (data and objects) until they are purged;
    // its listing still answers, from the Backups, and one left running never finishes.
    await k8s.delete(db);
    expect(get(K.cluster, db, `db-${db.shortId}`)).toBeUndefined();
    expect(get(K.secret, db, `db-${db.shortId}-backup-store`)).toBeUndefined();
    expect(fake.list('Backup', vpcNamespace(db.vpcId))).toHaveLength(3);
    const after = await k8s.listBackups(db);
    expect(after.archiving).toBe(false);
    expect(after.backups.find((b) => b.name === '20261125-060000')).toMatchObject({ status: 'completed', ref: '20261125T060001' });
    expect(after.backups.find((b) => b.name === '20261125-080000')).toMatchObject({
      status: 'failed',
      error: 'interrupted: the database was deleted during the backup',
      completedAt: new Date('2026-11-25T08:00:01Z'),
    });
    // Kept backups are not the database's objects: the sweep of orphans does not see them.
    const installation = randomUUID();
    const mine = adapter(store, installation);
    const other = database();
    await mine.apply(other);
    await mine.startBackup(other, '20261125-090000', 'manual');
    await mine.delete(other);
    expect(await mine.list()).toEqual([]);
    expect(get(K.backup, other, `db-${other.shortId}-backup-20261125-090000`)!.metadata.labels['pier.dev/installation']).toBe(installation);
  });

  it('restores into a new Cluster bootstrapped from the source repository, renamed by a Job before it is ready', async () => {
    const k8s = adapter();
    const source = database();
    await k8s.apply(source);
    const pitr = restoredFrom(source, { backupRef: null, targetTime: new Date('2026-11-25T06:30:00.250Z') });
    await k8s.apply(pitr);
    const c = get(K.cluster, pitr, `db-${pitr.shortId}`)!;
    expect(c.spec.bootstrap).toEqual({
      recovery: {
        source: `db-${source.shortId}`,
        database: source.shortId,
        owner: `app_${source.shortId}`,
        secret: { name: `db-${pitr.shortId}-restore` },
        recoveryTarget: { targetTime: '2026-11-25T06:30:00.250Z' },
      },
    });
    expect(c.spec.externalClusters).toEqual([
      {
        name: `db-${source.shortId}`,
        barmanObjectStore: expect.objectContaining({
          destinationPath: `s3://pier-backups/pier/databases/${source.id}`,
          serverName: `db-${source.shortId}`,
          s3Credentials: expect.objectContaining({ accessKeyId: { name: `db-${pitr.shortId}-backup-store`, key: 'ACCESS_KEY_ID' } }),
        }),
      },
    ]);
    // Its own backups go to its own place, never the source's.
    expect(c.spec.backup.barmanObjectStore.destinationPath).toBe(`s3://pier-backups/pier/databases/${pitr.id}`);
    expect(c.spec.managed.roles).toContainEqual({
      name: `app_${source.shortId}`,
      ensure: 'present',
      login: true,
      createdb: true,
      inRoles: [`app_${pitr.shortId}`],
      passwordSecret: { name: `db-${pitr.shortId}-restore` },
    });
    const restoreSecret = get(K.secret, pitr, `db-${pitr.shortId}-restore`)!;
    expect(Buffer.from(restoreSecret.data.username, 'base64').toString()).toBe(`app_${source.shortId}`);

    const job = get(K.job, pitr, `db-${pitr.shortId}-restore`)!;
    const container = job.spec.template.spec.containers[0];
    expect(container.image).toBe('ghcr.io/cloudnative-pg/postgresql:16.10');
    expect(container.command[2]).toContain(`ALTER DATABASE "${source.shortId}" RENAME TO "${pitr.shortId}"`);
    expect(container.command[2]).toContain(`REASSIGN OWNED BY "app_${source.shortId}" TO "app_${pitr.shortId}"`);
    expect(container.env).toContainEqual({ name: 'PGUSER', value: `app_${source.shortId}` });
    expect(container.env).toContainEqual({ name: 'PGPASSWORD', valueFrom: { secretKeyRef: { name: `db-${pitr.shortId}-restore`, key: 'password' } } });

    // Ready only once the rename has run; its failure is the database's.
    setStatus(K.cluster, pitr, `db-${pitr.shortId}`, { phase: 'Cluster in healthy state', readyInstances: 1 });
    expect(await seen(k8s, pitr)).toMatchObject({ phase: 'starting', reason: expect.stringContaining('restored data') });
    setStatus(K.job, pitr, `db-${pitr.shortId}-restore`, { succeeded: 1 });
    expect(await seen(k8s, pitr)).toEqual({ phase: 'ready' });
    setStatus(K.job, pitr, `db-${pitr.shortId}-restore`, { failed: 61, conditions: [{ type: 'Failed', status: 'True', message: 'BackoffLimitExceeded' }] });
    expect(await seen(k8s, pitr)).toMatchObject({ phase: 'failed', reason: expect.stringContaining('BackoffLimitExceeded') });

    // A point in time from a named backup; a named backup; a fork into another VPC.
    const fromNamed = restoredFrom(source, { backupRef: '20261125T060001', targetTime: new Date('2026-11-25T06:30:00Z') });
    const named = restoredFrom(source, { backupRef: '20261125T060001' });
    const fork = restoredFrom(source, { backupRef: '20261125T060001' }, { vpcId: randomUUID(), replicas: 2 });
    for (const db of [fromNamed, named, fork]) await k8s.apply(db);
    const target = (db: ClusterDatabase) => get(K.cluster, db, `db-${db.shortId}`)!.spec.bootstrap.recovery.recoveryTarget;
    expect(target(fromNamed)).toEqual({ targetTime: '2026-11-25T06:30:00.000Z', backupID: '20261125T060001' });
    expect(target(named)).toEqual({ backupID: '20261125T060001', targetImmediate: true });
    expect(target(fork)).toEqual({ backupID: '20261125T060001', targetImmediate: true });
    // A fork in another VPC reads the source's repository with its own namespace's Secret.
    const forkCluster = get(K.cluster, fork, `db-${fork.shortId}`)!;
    expect(forkCluster.metadata.namespace).toBe(vpcNamespace(fork.vpcId));
    expect(forkCluster.spec.instances).toBe(3); // replicas are instances
    expect(forkCluster.spec.externalClusters[0].barmanObjectStore.destinationPath).toBe(`s3://pier-backups/pier/databases/${source.id}`);
    expect(get(K.secret, fork, `db-${fork.shortId}-backup-store`)).toBeDefined();

    // Re-applying (a resize, more replicas) keeps the bootstrap as it was.
    await k8s.apply({ ...named, replicas: 1 });
    expect(get(K.cluster, named, `db-${named.shortId}`)!.spec).toMatchObject({ instances: 2, bootstrap: { recovery: { source: `db-${source.shortId}` } } });

    await k8s.delete(pitr);
    expect(get(K.job, pitr, `db-${pitr.shortId}-restore`)).toBeUndefined();
    expect(get(K.secret, pitr, `db-${pitr.shortId}-restore`)).toBeUndefined();
  });
});

describe('mysql on MOCO', () => {
  it('backs up through a BackupPolicy whose schedule never fires, with Jobs made from its CronJob', async () => {
    const k8s = adapter();
    const db = database({ engine: 'mysql', replicas: 3 });
    await k8s.apply(db);
    expect(get(K.mysql, db, `db-${db.shortId}`)!.spec).toMatchObject({ replicas: 3, backupPolicyName: `db-${db.shortId}-backup` });
    expect(get(K.account, db, `db-${db.shortId}-backup`)).toBeDefined();
    const policy = get(K.policy, db, `db-${db.shortId}-backup`)!;
    const secret = `db-${db.shortId}-backup-store`;
    // February 31st: a valid cron that never comes, so MOCO's CronJob never runs on its own.
    expect(policy.spec.schedule).toBe('0 0 31 2 *');
    expect(policy.spec.jobConfig).toEqual({
      serviceAccountName: `db-${db.shortId}-backup`,
      bucketConfig: {
        bucketName: 'pier-backups',
        endpointURL: `https://127.0.0.1:${store.port}`,
        region: 'us-east-1',
        usePathStyle: true,
        caCert: '/etc/pier-backup-store/ca.crt',
      },
      env: [
        { name: 'AWS_ACCESS_KEY_ID', valueFrom: { secretKeyRef: { name: secret, key: 'ACCESS_KEY_ID' } } },
        { name: 'AWS_SECRET_ACCESS_KEY', valueFrom: { secretKeyRef: { name: secret, key: 'ACCESS_SECRET_KEY' } } },
      ],
      workVolume: { emptyDir: {} },
      volumes: [{ name: 'backup-store-ca', secret: { secretName: secret, items: [{ key: 'ca.crt', path: 'ca.crt' }] } }],
      volumeMounts: [{ name: 'backup-store-ca', mountPath: '/etc/pier-backup-store', readOnly: true }],
    });

    // Before MOCO made its CronJob there is nothing to back up with.
    await expect(k8s.startBackup(db, '20261125-060000', 'manual')).rejects.toMatchObject({ code: 'database_not_running' });
    simulateMocoCronJob(db);
    await k8s.startBackup(db, '20261125-060000', 'scheduled');
    await k8s.startBackup(db, '20261125-060000', 'scheduled'); // the same name again does nothing
    await k8s.startBackup(db, '20261125-070000', 'manual');
    const job = get(K.job, db, `db-${db.shortId}-backup-20261125-060000`)!;
    const cron = get(K.cronJob, db, `moco-backup-db-${db.shortId}`)!;
    expect(job.spec).toEqual(cron.spec.jobTemplate.spec);
    expect(job.metadata.annotations).toEqual({ 'cronjob.kubernetes.io/instantiate': 'manual' });
    expect(job.metadata.labels).toMatchObject({
      'app.kubernetes.io/name': 'mysql-backup',
      'pier.dev/database-id': db.id,
      'pier.dev/backup-name': '20261125-060000',
      'pier.dev/backup-method': 'scheduled',
    });
    expect(job.metadata.ownerReferences).toBeUndefined();
    // Backup Jobs are not the database's init or restore Jobs.
    expect((await seen(k8s, db))!.phase).toBe('starting');

    // What the Job controller reports, and MOCO's record of the last backup.
    setStatus(K.job, db, `db-${db.shortId}-backup-20261125-060000`, {
      startTime: '2026-11-25T06:00:01Z',
      completionTime: '2026-11-25T06:01:30Z',
      succeeded: 1,
      conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: '2026-11-25T06:01:30Z' }],
    });
    setStatus(K.mysql, db, `db-${db.shortId}`, { backup: { time: '2026-11-25T06:00:03Z', dumpSize: 1000, binlogSize: 24 } });
    let listing = await k8s.listBackups(db);
    expect(listing).toMatchObject({ readable: true, archiving: false, archivedUntil: null });
    expect(listing.backups.find((b) => b.name === '20261125-060000')).toEqual({
      name: '20261125-060000',
      method: 'scheduled',
      status: 'completed',
      ref: '2026-11-25T06:01:30.000Z',
      sizeBytes: 1024,
      startedAt: new Date('2026-11-25T06:00:01Z'),
      completedAt: new Date('2026-11-25T06:01:30Z'),
      error: null,
    });
    expect(listing.backups.find((b) => b.name === '20261125-070000')).toMatchObject({ method: 'manual', status: 'running', ref: null });
    setStatus(K.job, db, `db-${db.shortId}-backup-20261125-070000`, {
      startTime: '2026-11-25T07:00:01Z',
      failed: 1,
      conditions: [
        {
          type: 'Failed',
          status: 'True',
          reason: 'BackoffLimitExceeded',
          message: 'Job has reached the specified backoff limit',
          lastTransitionTime: '2026-11-25T07:02:00Z',
        },
      ],
    });
    listing = await k8s.listBackups(db);
    expect(listing.backups.find((b) => b.name === '20261125-070000')).toMatchObject({
      status: 'failed',
      error: 'BackoffLimitExceeded: Job has reached the specified backoff limit',
      completedAt: new Date('2026-11-25T07:02:00Z'),
    });

    // Deleted, the database's backup Jobs stay and still list it.
    await k8s.delete(db);
    expect(get(K.policy, db, `db-${db.shortId}-backup`)).toBeUndefined();
    expect(get(K.account, db, `db-${db.shortId}-backup`)).toBeUndefined();
    expect((await k8s.listBackups(db)).backups.map((b) => b.status).sort()).toEqual(['completed', 'failed']);
  });

  it('restores into a new MySQLCluster from the source’s folder, and moves the tables into its own schema before it is ready', async () => {
    const k8s = adapter();
    const source = database({ engine: 'mysql' });
    await k8s.apply(source);
    const copy = restoredFrom(source, { backupRef: '2026-11-25T06:01:30.000Z' }, { vpcId: randomUUID() });
    await k8s.apply(copy);
    const m = get(K.mysql, copy, `db-${copy.shortId}`)!;
    expect(m.spec.restore).toEqual({
      sourceName: `db-${source.shortId}`,
      sourceNamespace: vpcNamespace(source.vpcId),
      restorePoint: '2026-11-25T06:01:30Z',
      jobConfig: get(K.policy, copy, `db-${copy.shortId}-backup`)!.spec.jobConfig,
    });
    const script = get(K.job, copy, `db-${copy.shortId}-restore`)!.spec.template.spec.containers[0].command[2];
    expect(script).toContain(`RENAME TABLE \`${source.shortId}\`.\``);
    expect(script).toContain(`TO \`${copy.shortId}\`.\``);
    expect(script).toContain(`DROP USER IF EXISTS 'app_${source.shortId}'@'%'`);

    const ready = { conditions: [{ type: 'Available', status: 'True' }] };
    setStatus(K.mysql, copy, `db-${copy.shortId}`, ready);
    setStatus(K.job, copy, `db-${copy.shortId}-init`, { succeeded: 1 });
    expect(await seen(k8s, copy)).toMatchObject({ phase: 'starting', reason: expect.stringContaining('restored data') });
    setStatus(K.job, copy, `db-${copy.shortId}-restore`, { succeeded: 1 });
    expect(await seen(k8s, copy)).toEqual({ phase: 'ready' });
    setStatus(K.job, copy, `db-${copy.shortId}-restore`, { failed: 61, conditions: [{ type: 'Failed', status: 'True', message: 'BackoffLimitExceeded' }] });
    expect(await seen(k8s, copy)).toMatchObject({ phase: 'failed', reason: expect.stringContaining('BackoffLimitExceeded') });
  });
});

describe('deleting from the bucket (a real S3-compatible server)', () => {
  const put = (keys: string[]) => Promise.all(keys.map((k) => s3.objects.write(k, k.endsWith('backup.info') ? '' : 'data')));
  const keys = async (prefix: string) => (await s3.objects.list(prefix)).map((o) => o.key).sort();
  const info = (id: string, beginWal: string, status = 'DONE') =>
    [
      `backup_id=${id}`,
      `backup_name=backup-${id}`,
      `begin_time=2026-11-25 06:00:01.000000+00:00`,
      `begin_wal=${beginWal}`,
      `status=${status}`,
      'timeline=1',
      '',
    ].join('\n');

  it('removes a CloudNativePG base backup and the WAL no remaining backup needs; a purge removes the repository', async () => {
    const k8s = adapter();
    const db = database();
    const neighbour = database();
    await k8s.apply(db);
    const root = `pier/databases/${db.id}/db-${db.shortId}/`;
    const wals = `${root}wals/0000000100000000/`;
    await put([
      `${root}base/20261125T060001/data.tar.gz`,
      `${root}base/20261125T070001/data.tar.gz`,
      `${root}base/20261125T080001/data.tar.gz`,
      `${wals}000000010000000000000001.gz`,
      `${wals}000000010000000000000002.gz`,
      `${wals}000000010000000000000002.00000028.backup.gz`,
      `${wals}000000010000000000000003.gz`,
      `${wals}000000010000000000000004.gz`,
      `${wals}000000010000000000000005.gz`,
      `${root}wals/00000002.history.gz`,
      `pier/databases/${neighbour.id}/db-${neighbour.shortId}/base/20261125T060001/data.tar.gz`,
      `pier/databases/${neighbour.id}/db-${neighbour.shortId}/wals/0000000100000000/000000010000000000000001.gz`,
    ]);
    await s3.objects.write(`${root}base/20261125T060001/backup.info`, info('20261125T060001', '000000010000000000000002'));
    await s3.objects.write(`${root}base/20261125T070001/backup.info`, info('20261125T070001', '000000010000000000000004'));
    await s3.objects.write(`${root}base/20261125T080001/backup.info`, info('20261125T080001', '000000010000000000000003', 'FAILED'));
    await k8s.startBackup(db, '20261125-060000', 'scheduled');
    await k8s.startBackup(db, '20261125-070000', 'scheduled');

    await k8s.deleteBackup(db, { name: '20261125-060000', ref: '20261125T060001' });
    await k8s.deleteBackup(db, { name: '20261125-060000', ref: '20261125T060001' }); // already gone: no error
    expect(await keys(root)).toEqual([
      `${root}base/20261125T070001/backup.info`,
      `${root}base/20261125T070001/data.tar.gz`,
      `${root}base/20261125T080001/backup.info`,
      `${root}base/20261125T080001/data.tar.gz`,
      // The oldest completed backup left begins at segment 4: earlier segments serve no recovery.
      `${wals}000000010000000000000004.gz`,
      `${wals}000000010000000000000005.gz`,
      `${root}wals/00000002.history.gz`,
    ]);
    expect(get(K.backup, db, `db-${db.shortId}-backup-20261125-060000`)).toBeUndefined();
    expect(get(K.backup, db, `db-${db.shortId}-backup-20261125-070000`)).toBeDefined();
    expect(await keys(`pier/databases/${neighbour.id}/`)).toHaveLength(2);

    await k8s.delete(db);
    await k8s.purgeBackups(db);
    await k8s.purgeBackups(db); // idempotent
    expect(await keys(`pier/databases/${db.id}/`)).toEqual([]);
    expect(fake.list('Backup', vpcNamespace(db.vpcId)).filter((b) => b.metadata.labels['pier.dev/database-id'] === db.id)).toEqual([]);
    expect(await keys(`pier/databases/${neighbour.id}/`)).toHaveLength(2);
  });

  it('removes the MOCO folder made during the backup Job’s run; a purge removes the cluster’s folder', async () => {
    const k8s = adapter();
    const db = database({ engine: 'mysql' });
    await k8s.apply(db);
    simulateMocoCronJob(db);
    const root = `moco/${vpcNamespace(db.vpcId)}/db-${db.shortId}/`;
    // Another cluster of the same name in another namespace, and another cluster here.
    const elsewhere = `moco/${vpcNamespace(randomUUID())}/db-${db.shortId}/20261125-060003/dump.tar`;
    const neighbour = `moco/${vpcNamespace(db.vpcId)}/db-0000beef/20261125-060003/dump.tar`;
    await put([
      `${root}20261125-050002/dump.tar`,
      `${root}20261125-060003/dump.tar`,
      `${root}20261125-060003/binlog.tar.zst`,
      `${root}20261125-070004/dump.tar`,
      elsewhere,
      neighbour,
    ]);
    await k8s.startBackup(db, '20261125-060000', 'manual');
    await k8s.startBackup(db, '20261125-070000', 'manual');
    setStatus(K.job, db, `db-${db.shortId}-backup-20261125-060000`, {
      startTime: '2026-11-25T06:00:01Z',
      completionTime: '2026-11-25T06:01:30Z',
      conditions: [{ type: 'Complete', status: 'True' }],
    });
    const { ref } = (await k8s.listBackups(db)).backups.find((b) => b.name === '20261125-060000')!;
    await k8s.deleteBackup(db, { name: '20261125-060000', ref });
    expect(await keys(root)).toEqual([`${root}20261125-050002/dump.tar`, `${root}20261125-070004/dump.tar`]);
    expect(get(K.job, db, `db-${db.shortId}-backup-20261125-060000`)).toBeUndefined();
    expect((await k8s.listBackups(db)).backups.map((b) => b.name)).toEqual(['20261125-070000']);

    await k8s.delete(db);
    await k8s.purgeBackups(db);
    expect(await keys(root)).toEqual([]);
    expect(fake.list('Job', vpcNamespace(db.vpcId)).filter((j) => j.metadata.labels['pier.dev/database-id'] === db.id)).toEqual([]);
    expect(await keys('moco/')).toEqual(expect.arrayContaining([elsewhere, neighbour]));
  });

  it('answers 503 when the store is out of reach', async () => {
    const k8s = adapter({ ...store, port: 1 });
    const db = database();
    await expect(k8s.deleteBackup(db, { name: '20261125-060000', ref: '20261125T060001' })).rejects.toMatchObject({
      code: 'backup_repository_unavailable',
    });
    await expect(k8s.purgeBackups(db)).rejects.toMatchObject({ code: 'backup_repository_unavailable' });
  });
});

describe('the API on the kubernetes adapter with a backup store', () => {
  let h: Databases;
  beforeAll(async () => {
    h = await startDatabases({}, { cluster: (installation) => adapter(store, installation) });
  });
  afterAll(async () => {
    await h?.stop();
  });

  const until = async (check: () => Promise<boolean>) => {
    for (let i = 0; i < 100 && !(await check()); i++) await new Promise((r) => setTimeout(r, 50));
    expect(await check()).toBe(true);
  };

  it('backs up, restores and forks; the new databases run once their data is their own', async () => {
    const ns = vpcNamespace(h.vpcId);
    const src = (await h.request('POST', h.base, { name: 'src' })).body;
    fake.setStatus(...K.cluster, ns, `db-${src.short_id}`, { phase: 'Cluster in healthy state', readyInstances: 1 });
    expect((await h.request('GET', `${h.base}/${src.id}`)).body.status).toBe('running');

    // No completed backup yet: a restore starts one (triggered) and asks to retry.
    const early = await h.request('POST', `${h.base}/${src.id}/backups/restore`, { name: 'copy' });
    expect(early.status).toBe(409);
    expect(early.body.code).toBe('backup_pending');
    const [triggered] = (await h.request('GET', `${h.base}/${src.id}/backups`)).body.items;
    expect(triggered).toMatchObject({ status: 'running', method: 'triggered' });
    const cr = `db-${src.short_id}-backup-${triggered.name}`;
    expect(fake.get(...K.backup, ns, cr)!.metadata.labels['pier.dev/backup-method']).toBe('triggered');
    fake.setStatus(...K.backup, ns, cr, {
      phase: 'completed',
      backupId: '20261125T060001',
      startedAt: '2026-11-25T06:00:01Z',
      stoppedAt: '2026-11-25T06:00:42Z',
    });
    const listed = (await h.request('GET', `${h.base}/${src.id}/backups`)).body;
    expect(listed.items[0]).toMatchObject({ name: triggered.name, status: 'completed', completed_at: '2026-11-25T06:00:42.000Z' });

    const copy = await h.request('POST', `${h.base}/${src.id}/backups/restore`, { name: 'copy', backup_name: triggered.name });
    expect(copy.status).toBe(202);
    expect(copy.body.status).toBe('creating');
    const c = fake.get(...K.cluster, ns, `db-${copy.body.short_id}`)!;
    expect(c.spec.bootstrap.recovery).toMatchObject({
      source: `db-${src.short_id}`,
      database: src.short_id,
      recoveryTarget: { backupID: '20261125T060001', targetImmediate: true },
    });
    fake.setStatus(...K.cluster, ns, `db-${copy.body.short_id}`, { phase: 'Cluster in healthy state', readyInstances: 1 });
    expect((await h.request('GET', `${h.base}/${copy.body.id}`)).body.status).toBe('creating');
    fake.setStatus(...K.job, ns, `db-${copy.body.short_id}-restore`, { succeeded: 1 });
    expect((await h.request('GET', `${h.base}/${copy.body.id}`)).body.status).toBe('running');
    const conn = (await h.request('GET', `${h.base}/${copy.body.id}/connection`)).body;
    expect(conn).toMatchObject({ username: `app_${copy.body.short_id}`, database: copy.body.short_id });

    const fork = await h.request('POST', `${h.base}/${src.id}/fork`, { name: 'forked' });
    expect(fork.status).toBe(202);
    expect(fake.get(...K.cluster, ns, `db-${fork.body.short_id}`)!.spec.bootstrap.recovery.recoveryTarget).toEqual({
      backupID: '20261125T060001',
      targetImmediate: true,
    });

    // Replicas of the restored database are instances of its Cluster.
    expect((await h.request('PATCH', `${h.base}/${copy.body.id}/replicas`, { replicas: 2 })).status).toBe(202);
    expect(fake.get(...K.cluster, ns, `db-${copy.body.short_id}`)!.spec.instances).toBe(3);

    // The source deleted: its backups stay listed (and restorable) from the kept Backup.
    expect((await h.request('DELETE', `${h.base}/${src.id}`)).status).toBe(202);
    await until(async () => (await h.request('GET', `${h.base}/${src.id}`)).status === 404);
    expect(fake.get(...K.cluster, ns, `db-${src.short_id}`)).toBeUndefined();
    const kept = await h.request('GET', `${h.base}/${src.id}/backups`);
    expect(kept.status).toBe(200);
    expect(kept.body.items).toEqual([expect.objectContaining({ name: triggered.name, status: 'completed' })]);
  });
});
