// Disk backups on the kubernetes adapter, against the in-process fake of the Kubernetes API:
// every object sent validated (the VolumeSnapshot against the external-snapshotter v8.7.0
// CRD in deploy/crds, the claims and Deployments against the Kubernetes schemas). The fake
// has no snapshot controller: where a test needs a snapshot ready (or failed) it sets the
// VolumeSnapshot's status itself, as the controller would, and says so.
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createLogger, vpcNamespace } from '@pier/kit';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { FakeKubernetes, restrictedViolations, validateManifest } from '@pier/testing';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import { KubernetesDiskBackups } from '../src/cluster/kubernetes-disk-backups.ts';
import { archiveJobManifest, archiveJobName, archiveSecretManifest } from '../src/cluster/kubernetes-disk-archive-manifests.ts';
import { quantityBytes, restoredClaimManifest, snapshotName, volumeSnapshotManifest } from '../src/cluster/kubernetes-snapshot-manifests.ts';
import { DiskBackupFailedError, type DiskRef } from '../src/domain/disk-backups/disk-backup-port.ts';
import type { WorkloadSpec } from '../src/domain/cluster-port.ts';
import type { CreateServiceInput } from '../src/domain/services/service-config.ts';
import { startCompute, until, type Compute } from './support.ts';
import { workloadSpec } from './workload-spec.ts';

const SNAPSHOTS = 'snapshot.storage.k8s.io/v1';
let fake: FakeKubernetes;
let kubeconfig: string;
let cluster: KubernetesCluster;
let backups: KubernetesDiskBackups;
const workspaceId = randomUUID();
const vpcId = randomUUID();
const ns = vpcNamespace(vpcId);
const never = new AbortController().signal;

beforeAll(async () => {
  fake = await new FakeKubernetes().start();
  kubeconfig = await fake.writeKubeconfig();
  cluster = KubernetesCluster.fromKubeconfig(kubeconfig, createLogger('test', 'warn'));
  backups = new KubernetesDiskBackups(kubeConfigFrom(kubeconfig), { snapshotClass: 'csi-snapclass', pollMs: 20 });
});

afterAll(async () => {
  await fake?.stop();
  if (kubeconfig) await rm(path.dirname(kubeconfig), { recursive: true, force: true });
});

const spec = (input: CreateServiceInput) => workloadSpec({ workspaceId, vpcId }, input);

const diskOf = (s: WorkloadSpec, volume: string | null = null): DiskRef => ({ ...s, volume });

/** What the fake holds, without what the API server adds (uid, resourceVersion, ...) and the status. */
function stored(apiVersion: string, kind: string, name: string) {
  const o = fake.get(apiVersion, kind, ns, name);
  if (!o) return undefined;
  const { uid: _uid, resourceVersion: _rv, generation: _generation, creationTimestamp: _created, ...metadata } = o.metadata;
  const { status: _status, ...rest } = o;
  return { ...rest, metadata };
}

/** The snapshot controller's part: the fake has none. */
const snapshotReady = (backupId: string, restoreSize: string) =>
  fake.setStatus(SNAPSHOTS, 'VolumeSnapshot', ns, snapshotName(backupId), { readyToUse: true, restoreSize });

describe('kubernetes adapter: VolumeSnapshots', () => {
  it('snapshots the claim (a valid VolumeSnapshot of the configured class) and completes once it is ready to use', async () => {
    const s = spec({ name: 'files', disk_size_gb: 2, disk_mount_path: '/data' });
    await cluster.apply(s);
    const id = randomUUID();
    await backups.capture(diskOf(s), id);
    expect(fake.invalid).toEqual([]);
    const manifest = volumeSnapshotManifest(diskOf(s), id, 'csi-snapclass');
    expect(stored(SNAPSHOTS, 'VolumeSnapshot', snapshotName(id))).toEqual(manifest);
    expect(manifest.spec).toEqual({ volumeSnapshotClassName: 'csi-snapclass', source: { persistentVolumeClaimName: 'files-disk' } });
    expect(manifest.metadata.labels).toMatchObject({ 'pier.dev/service': s.serviceId, 'pier.dev/backup': id });
    // Captured again (a backup followed after a restart): the same object, no error.
    await backups.capture(diskOf(s), id);

    const completing = backups.complete(diskOf(s), id, never);
    await new Promise((r) => setTimeout(r, 100));
    snapshotReady(id, '1536Mi');
    await expect(completing).resolves.toEqual({ sizeBytes: 1536 * 2 ** 20 });

    await backups.remove(diskOf(s), id);
    expect(fake.get(SNAPSHOTS, 'VolumeSnapshot', ns, snapshotName(id))).toBeUndefined();
    await backups.remove(diskOf(s), id);
  });

  it('fails a backup whose snapshot the controller reports an error for, or that is gone', async () => {
    const s = spec({ name: 'broken', disk_size_gb: 1, disk_mount_path: '/data' });
    await cluster.apply(s);
    const id = randomUUID();
    await backups.capture(diskOf(s), id);
    fake.setStatus(SNAPSHOTS, 'VolumeSnapshot', ns, snapshotName(id), { readyToUse: false, error: { message: 'the CSI driver cannot snapshot this volume' } });
    await expect(backups.complete(diskOf(s), id, never)).rejects.toThrow(
      new DiskBackupFailedError('the snapshot failed: the CSI driver cannot snapshot this volume'),
    );
    await backups.abandon(diskOf(s), id);
    await expect(backups.complete(diskOf(s), id, never)).rejects.toBeInstanceOf(DiskBackupFailedError);
  });

  it('restores: Deployment to zero, its pods gone, a new claim from the snapshot; the apply then repoints and scales it up', async () => {
    const s = spec({ name: 'db-ish', disk_size_gb: 5, disk_mount_path: '/data' });
    await cluster.apply(s);
    expect(fake.list('Pod', ns).filter((p) => p.metadata.labels['pier.dev/service'] === s.serviceId)).toHaveLength(1);
    const id = randomUUID();
    await backups.capture(diskOf(s), id);
    snapshotReady(id, '5Gi');

    const claim = backups.restoreVolume(diskOf(s), '1234abcd-0000-4000-8000-000000000000');
    expect(claim).toBe('db-ish-disk-1234abcd');
    await backups.prepareRestore(s, diskOf(s), id, claim, never);
    expect(fake.invalid).toEqual([]);
    expect(fake.get('apps/v1', 'Deployment', ns, 'db-ish')!.spec.replicas).toBe(0);
    expect(fake.list('Pod', ns).filter((p) => p.metadata.labels['pier.dev/service'] === s.serviceId)).toEqual([]);
    expect(stored('v1', 'PersistentVolumeClaim', claim)).toEqual(restoredClaimManifest(s, claim, id));
    expect(fake.get('v1', 'PersistentVolumeClaim', ns, claim)!.spec.dataSource).toEqual({
      apiGroup: 'snapshot.storage.k8s.io',
      kind: 'VolumeSnapshot',
      name: snapshotName(id),
    });
    // Prepared again (a resumed restore): the claim is there already.
    await backups.prepareRestore(s, diskOf(s), id, claim, never);

    const restored = { ...s, diskVolume: claim };
    await cluster.apply(restored);
    expect(fake.invalid).toEqual([]);
    const d = fake.get('apps/v1', 'Deployment', ns, 'db-ish')!;
    expect(d.spec.replicas).toBe(1);
    expect(d.spec.template.spec.volumes).toEqual([{ name: 'disk', persistentVolumeClaim: { claimName: claim } }]);
    // The claim the service was created with goes with the apply (and removeVolume finds nothing to do).
    // (The fake replaces an applied object whole; a real API server keeps the claim's dataSource,
    // which the create set and the apply, sending none, does not own.)
    expect(fake.get('v1', 'PersistentVolumeClaim', ns, 'db-ish-disk')).toBeUndefined();
    await backups.removeVolume(diskOf(s), null);
    expect(fake.get('v1', 'PersistentVolumeClaim', ns, claim)).toBeDefined();

    // A backup of the restored disk snapshots the new claim; deleting the service takes every claim of it.
    expect(volumeSnapshotManifest(diskOf(s, claim), randomUUID(), undefined).spec).toEqual({ source: { persistentVolumeClaimName: claim } });
    await cluster.delete(restored);
    expect(fake.list('PersistentVolumeClaim', ns).filter((p) => p.metadata.labels['pier.dev/service'] === s.serviceId)).toEqual([]);
  });

  it('suspends a cron service for a restore', async () => {
    const s = spec({ name: 'nightly', service_type: 'cron', cron_schedule: '@daily', disk_size_gb: 1, disk_mount_path: '/data' });
    await cluster.apply(s);
    const id = randomUUID();
    await backups.capture(diskOf(s), id);
    snapshotReady(id, '1Gi');
    await backups.prepareRestore(s, diskOf(s), id, backups.restoreVolume(diskOf(s), randomUUID()), never);
    expect(fake.invalid).toEqual([]);
    expect(fake.get('batch/v1', 'CronJob', ns, 'nightly')!.spec.suspend).toBe(true);
    await cluster.apply({ ...s, diskVolume: 'nightly-disk-restored' });
    expect(fake.get('batch/v1', 'CronJob', ns, 'nightly')!.spec.suspend).toBeUndefined();
  });

  it('refuses to restore a snapshot not ready, gone, or larger than the disk (the service is left as it was)', async () => {
    const s = spec({ name: 'small', disk_size_gb: 1, disk_mount_path: '/data' });
    await cluster.apply(s);
    const id = randomUUID();
    await backups.capture(diskOf(s), id);
    await expect(backups.prepareRestore(s, diskOf(s), id, 'small-disk-x', never)).rejects.toThrow(/is not ready to use/);
    snapshotReady(id, '2Gi');
    await expect(backups.prepareRestore(s, diskOf(s), id, 'small-disk-x', never)).rejects.toThrow(/more than the disk's 1 GiB/);
    await expect(backups.prepareRestore(s, diskOf(s), randomUUID(), 'small-disk-x', never)).rejects.toThrow(/is gone/);
    expect(fake.get('apps/v1', 'Deployment', ns, 'small')!.spec.replicas).toBe(1);
    expect(fake.get('v1', 'PersistentVolumeClaim', ns, 'small-disk-x')).toBeUndefined();
  });

  it('reads resource quantities as bytes', () => {
    expect([quantityBytes('1Gi'), quantityBytes('500M'), quantityBytes('1073741824'), quantityBytes(42), quantityBytes('1.5Ki')]).toEqual([
      2 ** 30,
      5e8,
      2 ** 30,
      42,
      1536,
    ]);
    expect([quantityBytes('lots'), quantityBytes(undefined), quantityBytes('1ki')]).toEqual([null, null, null]);
  });
});

describe('compute on kubernetes: disk backups through the API', () => {
  let c: Compute;
  const objectsOf = (kind: string, id: string) => fake.list(kind, vpcNamespace(c.vpcId)).filter((o) => o.metadata.labels?.['pier.dev/service'] === id);

  beforeAll(async () => {
    c = await startCompute({ PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: kubeconfig, PIER_COMPUTE_BACKUP_INTERVAL_MS: '3600000' });
  }, 60_000);

  afterAll(async () => {
    await c?.stop();
  });

  it('backs up (a snapshot made ready as its controller would) and restores: the Deployment on a claim from the snapshot, running', async () => {
    const svc = (await c.post(c.base, { name: 'files', image: 'registry.example/files:1', disk_size_gb: 3, disk_mount_path: '/srv' })).body;
    await until(
      () => c.get(`${c.base}/${svc.id}`).then((r) => r.body),
      (s) => s.status === 'running',
    );
    const taken = await c.post(`${c.base}/${svc.id}/backups`);
    expect(taken.status).toBe(202);
    const name = snapshotName(taken.body.id);
    await until(
      () => Promise.resolve(fake.get(SNAPSHOTS, 'VolumeSnapshot', vpcNamespace(c.vpcId), name)),
      (o) => o !== undefined,
    );
    expect(fake.get(SNAPSHOTS, 'VolumeSnapshot', vpcNamespace(c.vpcId), name)!.spec.source).toEqual({ persistentVolumeClaimName: 'files-disk' });
    fake.setStatus(SNAPSHOTS, 'VolumeSnapshot', vpcNamespace(c.vpcId), name, { readyToUse: true, restoreSize: '3Gi' });
    const list = await until(
      () => c.get(`${c.base}/${svc.id}/backups`).then((r) => r.body),
      (l) => l.items[0]?.status === 'completed',
      30_000,
    );
    expect(list.items[0]).toMatchObject({ id: taken.body.id, size_bytes: 3 * 2 ** 30, method: 'manual' });

    const res = await c.post(`${c.base}/${svc.id}/backups/restore`, { backup_id: taken.body.id });
    expect(res.status).toBe(202);
    expect(res.body.service.status).toBe('restoring');
    const done = await until(
      () => c.get(`${c.base}/${svc.id}/backups`).then((r) => r.body.restore),
      (r) => r.status !== 'running',
      30_000,
    );
    expect(done.status).toBe('completed');
    expect((await c.get(`${c.base}/${svc.id}`)).body.status).toBe('running');
    const claim = `files-disk-${done.id.slice(0, 8)}`;
    // The claim the restore created from the snapshot (its dataSource is in the fake's record of what it received).
    expect(objectsOf('PersistentVolumeClaim', svc.id).map((p) => p.metadata.name)).toEqual([claim]);
    const created = fake.received.find((o) => o.kind === 'PersistentVolumeClaim' && o.metadata.name === claim && o.spec.dataSource);
    expect(created?.spec.dataSource).toEqual({ apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name });
    const d = fake.get('apps/v1', 'Deployment', vpcNamespace(c.vpcId), 'files')!;
    expect(d.spec.replicas).toBe(1);
    expect(d.spec.template.spec.volumes[0].persistentVolumeClaim.claimName).toBe(claim);
    expect(fake.invalid).toEqual([]);

    // A later rollout keeps the restored claim.
    expect((await c.post(`${c.base}/${svc.id}/restart`)).status).toBe(202);
    expect(fake.get('apps/v1', 'Deployment', vpcNamespace(c.vpcId), 'files')!.spec.template.spec.volumes[0].persistentVolumeClaim.claimName).toBe(claim);

    // Deleting the service: its claims go with it, its snapshots with the scheduler's next pass.
    expect((await c.request('DELETE', `${c.base}/${svc.id}`)).status).toBe(202);
    await until(
      () => c.get(`${c.base}/${svc.id}`).then((r) => r.body),
      (s) => s.status === 'deleted',
    );
    expect(objectsOf('PersistentVolumeClaim', svc.id)).toEqual([]);
    await c.running.runDiskBackupsDue(new Date());
    expect(objectsOf('VolumeSnapshot', svc.id)).toEqual([]);
  }, 120_000);
});

describe('kubernetes adapter: archives by Jobs (storage without snapshots)', () => {
  const ref = { workspaceId: randomUUID(), vpcId: randomUUID(), serviceId: randomUUID(), serviceName: 'files' };
  const store = ['PIER_S3_HOST=s3.internal', 'PIER_S3_KEY=AKIA', 'PIER_S3_SECRET=s3cr3t=with=equals', 'PIER_S3_PREFIX=pier-compute'];

  it('makes Jobs the VPC namespace admits ("restricted"), as the service’s user, with the store’s keys in a Secret of their own', () => {
    for (const step of ['backup', 'restore', 'delete'] as const) {
      const job = archiveJobManifest(ref, {
        step,
        id: randomUUID(),
        key: `services/${ref.serviceId}/x.tar.zst`,
        claim: step === 'delete' ? undefined : 'files-disk',
        image: 'pier/volume-tools:1',
        deadlineSeconds: 3600,
        uid: 1000,
      }) as any;
      expect(() => validateManifest(job), step).not.toThrow();
      const pod = job.spec.template.spec;
      expect(restrictedViolations(pod), step).toEqual([]);
      expect(pod.securityContext).toMatchObject({ runAsUser: 1000, fsGroup: 1000 });
      // Not a pod of the service: a restore waits for those to be gone.
      expect(job.spec.template.metadata.labels['pier.dev/service']).toBeUndefined();
      // The keys only through the Secret, never in the Job's own spec.
      expect(JSON.stringify(job)).not.toContain('s3cr3t');
      expect(pod.containers[0].envFrom).toEqual([{ secretRef: { name: job.metadata.name } }]);
      const disk = pod.volumes.find((v: any) => v.persistentVolumeClaim);
      if (step === 'delete') expect(disk).toBeUndefined();
      else expect(disk.persistentVolumeClaim).toEqual({ claimName: 'files-disk', readOnly: step === 'backup' });
    }
    const secret = archiveSecretManifest(ref, archiveJobName('backup', 'b1'), store) as any;
    expect(() => validateManifest(secret)).not.toThrow();
    expect(secret.stringData).toMatchObject({ PIER_S3_SECRET: 's3cr3t=with=equals', PIER_S3_PREFIX: 'pier-compute' });
  });
});
