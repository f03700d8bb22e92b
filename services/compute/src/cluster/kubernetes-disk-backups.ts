import { KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
// Not re-exported by the package root; the generic object API serializes bodies through it.
import { ObjectSerializer } from '@kubernetes/client-node/dist/serializer.js';
import { UnavailableError, vpcNamespace, isKubernetesNotFound } from '@pier/kit';
import { kubernetesApiConfiguration } from '@pier/kit/kubernetes';
import type { WorkloadSpec } from '../domain/cluster-port.ts';
import { DiskBackupFailedError, type DiskBackupPort, type DiskRef } from '../domain/disk-backups/disk-backup-port.ts';
import { FIELD_MANAGER, deleteObject, kubernetesCall, kubernetesError, modelTypeOf } from './kubernetes.ts';
import { diskClaimName, type Manifest } from './kubernetes-manifests.ts';
import {
  SNAPSHOT_API_VERSION,
  podsOf,
  quantityBytes,
  restoredClaimManifest,
  scaledDownManifest,
  snapshotName,
  volumeSnapshotManifest,
} from './kubernetes-snapshot-manifests.ts';

// Disk backups on the kubernetes adapter: a VolumeSnapshot of the service's claim per backup
// (the CSI driver's snapshot, crash-consistent: what a power cut would leave; the replicas
// go on running), complete once the snapshot controller reports it readyToUse; its
// restoreSize is the backup's size. Deleting the VolumeSnapshot deletes the backup (with the
// class's deletionPolicy: Delete, its content and the storage's snapshot go too).
//
// A restore: the Deployment scaled to zero (a CronJob suspended) and its pods gone, then a new
// claim with the snapshot as its dataSource; the domain repoints the workload at it (apply,
// which also scales it up again) and deletes the old claim. Compute's account needs create,
// get, list, patch and delete on volumesnapshots and persistentvolumeclaims.

export interface KubernetesDiskBackupsOptions {
  /** The VolumeSnapshotClass; unset, the cluster's default for the claim's CSI driver. */
  snapshotClass?: string;
  /** How often a snapshot (or pods stopping) is looked at. */
  pollMs?: number;
  /** A snapshot not ready after this long fails the backup. */
  snapshotTimeoutMs?: number;
  /** Pods still there after this long leave the restore to the next pass. */
  scaleDownTimeoutMs?: number;
}

interface SnapshotObject {
  status?: { readyToUse?: boolean; restoreSize?: string | number; error?: { message?: string } };
}

/** Waits `ms`, or less when `signal` aborts (the disk backups' polls). */
export const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

export class KubernetesDiskBackups implements DiskBackupPort {
  readonly kind = 'kubernetes' as const;
  readonly survivesRestart = true;
  protected readonly objects: KubernetesObjectApi;

  constructor(
    kc: KubeConfig,
    protected readonly opts: KubernetesDiskBackupsOptions = {},
  ) {
    this.objects = new KubernetesObjectApi(kubernetesApiConfiguration(kc, 15_000));
  }

  restoreVolume(disk: DiskRef, restoreId: string): string {
    return `${diskClaimName(disk.serviceName)}-${restoreId.slice(0, 8)}`;
  }

  async capture(disk: DiskRef, backupId: string): Promise<void> {
    // Idempotent: a backup followed again after a restart applies the same object.
    await this.apply(volumeSnapshotManifest(disk, backupId, this.opts.snapshotClass));
  }

  async complete(disk: DiskRef, backupId: string, signal: AbortSignal): Promise<{ sizeBytes: number | null }> {
    const deadline = Date.now() + (this.opts.snapshotTimeoutMs ?? 30 * 60_000);
    for (;;) {
      if (signal.aborted) throw new UnavailableError('compute is stopping', 'stopping');
      let snapshot: SnapshotObject | null | undefined;
      try {
        snapshot = await this.snapshot(disk, backupId);
      } catch (err) {
        // The API out of reach for a moment: the snapshot goes on regardless; look again.
        if (!(err instanceof UnavailableError)) throw err;
      }
      if (snapshot === null) throw new DiskBackupFailedError(`the VolumeSnapshot ${snapshotName(backupId)} is gone`);
      const status = snapshot?.status;
      if (status?.error?.message) throw new DiskBackupFailedError(`the snapshot failed: ${status.error.message}`);
      if (status?.readyToUse === true) return { sizeBytes: quantityBytes(status.restoreSize) };
      if (Date.now() > deadline)
        throw new DiskBackupFailedError(`the snapshot was not ready within ${Math.round((this.opts.snapshotTimeoutMs ?? 1_800_000) / 1000)}s`);
      await sleep(this.opts.pollMs ?? 2000, signal);
    }
  }

  async abandon(disk: DiskRef, backupId: string): Promise<void> {
    await this.remove(disk, backupId);
  }

  async remove(disk: DiskRef, backupId: string): Promise<void> {
    await this.delete(disk, SNAPSHOT_API_VERSION, 'VolumeSnapshot', snapshotName(backupId));
  }

  async prepareRestore(spec: WorkloadSpec, disk: DiskRef, backupId: string, claim: string, signal: AbortSignal): Promise<void> {
    const snapshot = await this.snapshot(disk, backupId);
    if (snapshot === null) throw new DiskBackupFailedError(`the VolumeSnapshot ${snapshotName(backupId)} of this backup is gone`);
    if (snapshot.status?.readyToUse !== true) throw new DiskBackupFailedError(`the VolumeSnapshot ${snapshotName(backupId)} is not ready to use`);
    const size = quantityBytes(snapshot.status.restoreSize);
    const diskBytes = (spec.config.disk_size_gb ?? 0) * 2 ** 30;
    if (size !== null && size > diskBytes) {
      throw new DiskBackupFailedError(`the backup holds ${size} bytes, more than the disk's ${spec.config.disk_size_gb} GiB: grow disk_size_gb first`);
    }
    await this.apply(scaledDownManifest(spec));
    await this.podsGone(spec, signal);
    await this.create(restoredClaimManifest(spec, claim, backupId));
  }

  /**
   * Created, not applied (a restored claim's dataSource is set once, and the later applies of
   * the claim, field manager pier-compute, then own only what they send); one a resumed step
   * made already is the goal too.
   */
  protected async create(manifest: Manifest): Promise<void> {
    await kubernetesCall(`create ${manifest.kind}/${manifest.metadata.name}`, () =>
      this.objects.create(ObjectSerializer.deserialize(manifest, modelTypeOf(manifest)) as KubernetesObject, undefined, undefined, FIELD_MANAGER),
    ).catch((err: Error) => {
      if (!/already exists/i.test(err.message)) throw err;
    });
  }

  async removeVolume(disk: DiskRef, volume: string | null): Promise<void> {
    await this.delete(disk, 'v1', 'PersistentVolumeClaim', volume ?? diskClaimName(disk.serviceName));
  }

  /** The backup's VolumeSnapshot, or null when there is none. */
  private async snapshot(disk: DiskRef, backupId: string): Promise<SnapshotObject | null> {
    try {
      return (await this.objects.read({
        apiVersion: SNAPSHOT_API_VERSION,
        kind: 'VolumeSnapshot',
        metadata: { name: snapshotName(backupId), namespace: vpcNamespace(disk.vpcId) },
      })) as SnapshotObject;
    } catch (err) {
      if (isKubernetesNotFound(err)) return null;
      throw kubernetesError(err, 'read VolumeSnapshot');
    }
  }

  /** Until no pod of the service runs (a suspended CronJob's finished runs stay, and do not count). */
  protected async podsGone(spec: WorkloadSpec, signal: AbortSignal): Promise<void> {
    const deadline = Date.now() + (this.opts.scaleDownTimeoutMs ?? 120_000);
    for (;;) {
      const pods = await kubernetesCall('list pods', () =>
        this.objects.list<V1Pod>('v1', 'Pod', vpcNamespace(spec.vpcId), undefined, undefined, undefined, undefined, podsOf(spec.serviceId)),
      );
      const live = pods.items.filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed');
      if (live.length === 0) return;
      if (signal.aborted || Date.now() > deadline) {
        throw new UnavailableError(`the service's pods (${live.map((p) => p.metadata?.name).join(', ')}) have not stopped yet`, 'cluster_unavailable');
      }
      await sleep(this.opts.pollMs ?? 2000, signal);
    }
  }

  protected async apply(m: Manifest): Promise<void> {
    // Core kinds go through the client's typed models (their property names differ from the wire's in places); a custom resource has none.
    const body = m.apiVersion === SNAPSHOT_API_VERSION ? m : ObjectSerializer.deserialize(m, modelTypeOf(m));
    await kubernetesCall(`apply ${m.kind}/${m.metadata.name}`, () =>
      this.objects.patch(body as KubernetesObject, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply),
    );
  }

  protected async delete(disk: DiskRef, apiVersion: string, kind: string, name: string): Promise<void> {
    await deleteObject(this.objects, vpcNamespace(disk.vpcId), { apiVersion, kind, name });
  }
}
