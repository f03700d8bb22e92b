// Disk backups and restores across a crash of compute, for real: compute runs as its own
// process, a crash point (PIER_CRASH_AT) SIGKILLs it in the middle, and the next process on
// the same records and the same Docker engine finishes or undoes what was left: never a
// backup or restore left running, never a replica left frozen, never a volume left over.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminQuery, createTestDatabase, docker, infra, removeVpcObjects } from '@pier/testing';
import { ComputeProcess } from './compute-process.ts';
import { until, TINY_HTTP, type TestDatabase } from './support.ts';
import { BACKUP_VOLUME, ensureBackupVolume, replicaOf, shellIn, storedBackups, volumesOf } from './disk-backup-support.ts';

let db: TestDatabase;
let compute: ComputeProcess;
const workspaceId = randomUUID();
const vpcId = randomUUID();
const base = `/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}/services`;
let svc: string;

const list = async () => (await compute.call('GET', `${base}/${svc}/backups`)).body;
const service = async () => (await compute.call('GET', `${base}/${svc}`)).body;
const row = async (table: 'disk_backups' | 'disk_restores', id: string) =>
  (await adminQuery(db.adminUrl, `select * from compute.${table} where id = $1`, [id]))[0];
const note = async () => (await shellIn(await replicaOf(vpcId, svc), 'cat /data/note.txt')).out;

async function completedBackup(): Promise<string> {
  const id = (await compute.call('POST', `${base}/${svc}/backups`)).body.id;
  await until(list, (l) => l.items.find((b: any) => b.id === id)?.status === 'completed', 60_000);
  return id;
}

beforeAll(async () => {
  await ensureBackupVolume();
  db = await createTestDatabase(infra().postgresAdminUrl);
  compute = await ComputeProcess.start(
    db,
    { workspaceId, vpcId },
    {
      PIER_COMPUTE_BACKUP_VOLUME: BACKUP_VOLUME,
      PIER_COMPUTE_BACKUP_INTERVAL_MS: '1000',
      PIER_EDGE: 'off',
    },
  );
  const created = await compute.call('POST', base, {
    name: 'keeper',
    image: TINY_HTTP,
    health_check_path: '/healthz',
    disk_size_gb: 1,
    disk_mount_path: '/data',
  });
  expect(created.status).toBe(201);
  svc = created.body.id;
  await until(service, (s) => s.status === 'running');
  expect((await shellIn(await replicaOf(vpcId, svc), 'echo original > /data/note.txt')).code).toBe(0);
}, 120_000);

afterAll(async () => {
  await compute?.stop();
  await removeVpcObjects(vpcId);
  await db?.drop();
}, 120_000);

describe('SIGKILL of compute in the middle of a disk backup or restore', () => {
  it('with the replicas paused for a copy: the next process thaws them and fails the backup with the reason', async () => {
    const replica = await replicaOf(vpcId, svc);
    let id = '';
    await compute.crashAt('compute.backup.paused', async () => {
      id = (await compute.call('POST', `${base}/${svc}/backups`)).body.id;
    });
    expect((await docker.getContainer(replica).inspect()).State.Status).toBe('paused');
    expect((await row('disk_backups', id)).status).toBe('running');

    await compute.spawn();
    const failed = await until(
      () => row('disk_backups', id),
      (r) => r.status !== 'running',
      60_000,
    );
    expect(failed).toMatchObject({ status: 'failed', error: 'compute restarted during the backup; take another' });
    expect((await docker.getContainer(replica).inspect()).State.Status).toBe('running');
    expect(await storedBackups(svc)).not.toContain(id);
    expect((await docker.listContainers({ all: true, filters: JSON.stringify({ name: [`pier-disk-backup-${id}`] }) })).length).toBe(0);
    await until(service, (s) => s.status === 'running');
  }, 120_000);

  it('after the archive was made, before the backup was recorded complete: the next process fails it and removes the archive', async () => {
    let id = '';
    await compute.crashAt('compute.backup.captured', async () => {
      id = (await compute.call('POST', `${base}/${svc}/backups`)).body.id;
    });
    expect((await row('disk_backups', id)).status).toBe('running');
    // The tool container outlives compute and puts the archive in the store: an object of a backup no record completes.
    await until(
      () => storedBackups(svc),
      (ids) => ids.includes(id),
      30_000,
    );

    await compute.spawn();
    const failed = await until(
      () => row('disk_backups', id),
      (r) => r.status !== 'running',
      60_000,
    );
    expect(failed).toMatchObject({ status: 'failed', error: 'compute restarted during the backup; take another' });
    // No store object without a completed record, no tool container left.
    expect(await storedBackups(svc)).not.toContain(id);
    expect((await docker.listContainers({ all: true, filters: JSON.stringify({ name: [`pier-disk-backup-${id}`] }) })).length).toBe(0);
    await until(service, (s) => s.status === 'running');
  }, 120_000);

  it('after the new volume was filled: the next process switches to it and finishes the restore', async () => {
    const backup = await completedBackup();
    expect((await shellIn(await replicaOf(vpcId, svc), 'echo changed > /data/note.txt')).code).toBe(0);
    let restoreId = '';
    await compute.crashAt('compute.restore.prepared', async () => {
      restoreId = (await compute.call('POST', `${base}/${svc}/backups/restore`, { backup_id: backup })).body.restore.id;
    });
    expect(await row('disk_restores', restoreId)).toMatchObject({ status: 'running', step: 'preparing' });

    await compute.spawn();
    const done = await until(
      () => row('disk_restores', restoreId),
      (r) => r.status !== 'running',
      90_000,
    );
    expect(done).toMatchObject({ status: 'completed', step: 'switched', error: null });
    expect(await service()).toMatchObject({ status: 'running' });
    expect(await note()).toBe('original\n');
    expect(await volumesOf(svc)).toEqual([done.to_volume]);
  }, 180_000);

  it('after the replicas were started on the restored volume: the next process removes the old one and finishes', async () => {
    const backup = await completedBackup();
    expect((await shellIn(await replicaOf(vpcId, svc), 'echo changed again > /data/note.txt')).code).toBe(0);
    let restoreId = '';
    await compute.crashAt('compute.restore.started', async () => {
      restoreId = (await compute.call('POST', `${base}/${svc}/backups/restore`, { backup_id: backup })).body.restore.id;
    });
    const left = await row('disk_restores', restoreId);
    expect(left).toMatchObject({ status: 'running', step: 'switched' });
    expect(await volumesOf(svc)).toEqual([left.from_volume, left.to_volume].sort());

    await compute.spawn();
    const done = await until(
      () => row('disk_restores', restoreId),
      (r) => r.status !== 'running',
      90_000,
    );
    expect(done.status).toBe('completed');
    expect(await service()).toMatchObject({ status: 'running' });
    expect(await note()).toBe('original\n');
    expect(await volumesOf(svc)).toEqual([left.to_volume]);
  }, 180_000);
});
