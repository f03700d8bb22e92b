// Disk backups on the REAL single-node Kubernetes (deploy/kube/cluster.sh), whose storage
// (local-path-provisioner) takes no snapshots: archived into an S3 store (versitygw,
// pier/s3-test, over HTTPS with its own CA) by a Job of pier/volume-tools that mounts the
// service's claim, restored by another into a new claim the service then runs on, and
// removed from the bucket with the service. The service writes a line at each start on its
// disk and serves the file, so what is on the disk is read through the ingress controller.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { vpcNamespace } from '@pier/kit';
import { machineAddress, realKubernetes, startS3TestServer, type RealKubernetes, type S3TestServer } from '@pier/testing';
import { onRealCluster, startCompute, until, TINY_HTTP, type Compute } from './support.ts';
import { deleteAndSweep, s3BackupEnv } from './disk-backup-support.ts';

let k: RealKubernetes;
let s3: S3TestServer;
let c: Compute;
let dir: string;
let ns: string;

/** The service's disk file once it holds `lines` lines, through the ingress. */
const diskWith = (host: string, lines: number) =>
  until(
    () => k.viaIngress(host).catch((err: Error) => ({ status: 0, body: err.message })),
    (r) => r.status === 200 && r.body.trim().split('\n').length === lines,
    120_000,
    250,
  ).then((r) => r.body.trim().split('\n'));

beforeAll(async () => {
  k = realKubernetes();
  k.requireNode();
  s3 = await startS3TestServer('pier-disk-backups-kube', machineAddress());
  dir = await mkdtemp(path.join(tmpdir(), 'pier-s3-ca-'));
  await writeFile(path.join(dir, 'ca.pem'), s3.caPem);
  c = await startCompute({
    ...onRealCluster(k),
    // No VolumeSnapshot here: the archive method, as chosen by default with a store.
    ...s3BackupEnv(s3, path.join(dir, 'ca.pem')),
  });
  ns = vpcNamespace(c.vpcId);
}, 120_000);

afterAll(async () => {
  await c?.stop();
  if (k && ns) await k.deleteNamespace(ns);
  await s3?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

describe('disk backups on a real cluster without snapshots: archives made by Jobs', () => {
  it('archives the disk into the bucket, restores it into a new claim, and removes a deleted service’s archives', async () => {
    const created = await c.post(c.base, {
      name: 'journal',
      image: TINY_HTTP,
      port: 8080,
      disk_size_gb: 1,
      disk_mount_path: '/data',
      command: ['/bin/busybox', 'sh', '-c', 'echo "boot $(cat /proc/sys/kernel/random/uuid)" >> /data/index.html; exec /bin/busybox httpd -f -p 8080 -h /data'],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const svc = created.body;
    const host = new URL(svc.url).hostname;
    const [first] = await diskWith(host, 1);

    const t = Date.now();
    const taken = (await c.post(`${c.base}/${svc.id}/backups`)).body;
    const list = await until(
      () => c.get(`${c.base}/${svc.id}/backups`).then((r) => r.body),
      (l) => l.items[0]?.status !== 'running',
      120_000,
      500,
    );
    expect(list.items[0]).toMatchObject({ id: taken.id, status: 'completed', error: null });
    expect(list.items[0].size_bytes).toBeGreaterThan(0);
    console.log(`disk backup (archive Job) taken in ${Date.now() - t} ms`);
    expect(await s3.keys()).toEqual([`pier-compute/services/${svc.id}/${taken.id}.tar.zst`]);
    // The copy's Job and the Secret with the store's keys are gone with it.
    expect(await k.list(`/apis/batch/v1/namespaces/${ns}/jobs`, 'pier.dev/kind=disk-backup')).toEqual([]);
    expect(await k.list(`/api/v1/namespaces/${ns}/secrets`, 'pier.dev/kind=disk-backup')).toEqual([]);

    // A restart writes a second line; the restore brings back the disk as it was (one line),
    // and the service's start on it writes a new one.
    expect((await c.post(`${c.base}/${svc.id}/restart`)).status).toBe(202);
    const [, second] = await diskWith(host, 2);
    expect((await c.post(`${c.base}/${svc.id}/backups/restore`, { backup_id: taken.id })).status).toBe(202);
    const restore = await until(
      () => c.get(`${c.base}/${svc.id}/backups`).then((r) => r.body.restore),
      (r) => r.status !== 'running',
      180_000,
      500,
    );
    expect(restore, JSON.stringify(restore)).toMatchObject({ status: 'completed', error: null });
    const restored = await diskWith(host, 2);
    expect(restored[0]).toBe(first);
    expect(restored).not.toContain(second);
    // On a new claim; the old one is gone.
    const claims = await k.list(`/api/v1/namespaces/${ns}/persistentvolumeclaims`);
    expect(claims.map((p) => p.metadata.name)).toEqual([expect.stringMatching(/^journal-disk-[0-9a-f]{8}$/)]);

    await deleteAndSweep(c, svc.id);
    expect(await s3.keys()).toEqual([]);
  }, 420_000);
});
