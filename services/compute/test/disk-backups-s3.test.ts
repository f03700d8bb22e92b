// Disk backups into an S3-compatible store instead of the volume, on the real Docker engine:
// versitygw (pier/s3-test) over HTTPS with a certificate of its own, which compute is told to
// trust. The archive lands in the bucket under the prefix, a restore reads it back, and a
// deleted service's archives leave the bucket.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { machineAddress, startS3TestServer, type S3TestServer } from '@pier/testing';
import { startCompute, until, cleanDocker, TINY_HTTP, type Compute } from './support.ts';
import { deleteAndSweep, replicaOf, s3BackupEnv, shellIn } from './disk-backup-support.ts';

let s3: S3TestServer;
let c: Compute;
let dir: string;

beforeAll(async () => {
  s3 = await startS3TestServer('pier-disk-backups', machineAddress());
  dir = await mkdtemp(path.join(tmpdir(), 'pier-s3-ca-'));
  await writeFile(path.join(dir, 'ca.pem'), s3.caPem);
  c = await startCompute({
    ...s3BackupEnv(s3, path.join(dir, 'ca.pem')),
  });
}, 120_000);

afterAll(async () => {
  await c?.stop();
  if (c) await cleanDocker(c.vpcId);
  await s3?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

describe('disk backups in an S3-compatible store', () => {
  it('backs up into the bucket, restores from it, and removes a deleted service’s archives', async () => {
    const svc = (await c.post(c.base, { name: 'bucketed', image: TINY_HTTP, disk_size_gb: 1, disk_mount_path: '/data' })).body;
    await until(
      () => c.get(`${c.base}/${svc.id}`).then((r) => r.body),
      (s) => s.status === 'running',
    );
    expect((await shellIn(await replicaOf(c.vpcId, svc.id), 'echo in the bucket > /data/note.txt')).code).toBe(0);

    const taken = (await c.post(`${c.base}/${svc.id}/backups`)).body;
    const list = await until(
      () => c.get(`${c.base}/${svc.id}/backups`).then((r) => r.body),
      (l) => l.items[0]?.status !== 'running',
      60_000,
    );
    expect(list.items[0]).toMatchObject({ id: taken.id, status: 'completed', error: null });
    expect(await s3.keys()).toEqual([`pier-compute/services/${svc.id}/${taken.id}.tar.zst`]);

    expect((await shellIn(await replicaOf(c.vpcId, svc.id), 'echo overwritten > /data/note.txt')).code).toBe(0);
    expect((await c.post(`${c.base}/${svc.id}/backups/restore`, { backup_id: taken.id })).status).toBe(202);
    const restore = await until(
      () => c.get(`${c.base}/${svc.id}/backups`).then((r) => r.body.restore),
      (r) => r.status !== 'running',
      60_000,
    );
    expect(restore).toMatchObject({ status: 'completed', error: null });
    expect((await shellIn(await replicaOf(c.vpcId, svc.id), 'cat /data/note.txt')).out).toBe('in the bucket\n');

    await deleteAndSweep(c, svc.id);
    expect(await s3.keys()).toEqual([]);
  }, 180_000);
});
