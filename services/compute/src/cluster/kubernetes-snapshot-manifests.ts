// The Kubernetes objects of disk backups: a VolumeSnapshot (snapshot.storage.k8s.io/v1, the
// CSI external-snapshotter's API) of the service's claim per backup, and the claim a restore
// makes from one. Pure functions: the adapter sends them, the tests validate them against the
// CRD and the Kubernetes schemas.
import { vpcNamespace } from '@pier/kit';
import type { WorkloadSpec } from '../domain/cluster-port.ts';
import type { DiskRef } from '../domain/disk-backups/disk-backup-port.ts';
import { K8S_LABEL, cronJobManifest, deploymentManifest, diskClaimName, serviceLabels, type Manifest } from './kubernetes-manifests.ts';

export const SNAPSHOT_API_VERSION = 'snapshot.storage.k8s.io/v1';
/** On a backup's VolumeSnapshot: the backup's id. */
export const BACKUP_LABEL = 'pier.dev/backup';

export function snapshotName(backupId: string): string {
  return `pier-backup-${backupId}`;
}

/** `className` unset: the cluster's default VolumeSnapshotClass for the claim's driver. */
export function volumeSnapshotManifest(disk: DiskRef, backupId: string, className: string | undefined): Manifest {
  return {
    apiVersion: SNAPSHOT_API_VERSION,
    kind: 'VolumeSnapshot',
    metadata: { name: snapshotName(backupId), namespace: vpcNamespace(disk.vpcId), labels: { ...serviceLabels(disk), [BACKUP_LABEL]: backupId } },
    spec: {
      ...(className ? { volumeSnapshotClassName: className } : {}),
      source: { persistentVolumeClaimName: disk.volume ?? diskClaimName(disk.serviceName) },
    },
  };
}

/**
 * A new claim of the disk's size whose contents are the snapshot's (the CSI driver fills it
 * when it is provisioned); with no backup id, an empty one (an archive's restore fills it).
 */
export function restoredClaimManifest(spec: WorkloadSpec, claim: string, backupId: string | null): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: claim, namespace: vpcNamespace(spec.vpcId), labels: serviceLabels(spec) },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: `${spec.config.disk_size_gb}Gi` } },
      ...(backupId ? { dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: snapshotName(backupId) } } : {}),
    },
  };
}

/** The workload at zero: the Deployment without replicas, or the CronJob suspended (a run in progress ends on its own). */
export function scaledDownManifest(spec: WorkloadSpec): Manifest {
  if (spec.config.service_type === 'cron') {
    const cron = cronJobManifest(spec);
    return { ...cron, spec: { ...(cron.spec as Record<string, unknown>), suspend: true } };
  }
  return deploymentManifest({ ...spec, config: { ...spec.config, min_replicas: 0 } });
}

/** The label selector of every pod of the service (replicas and cron runs). */
export const podsOf = (serviceId: string) => `${K8S_LABEL.service}=${serviceId}`;

const UNITS: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** A resource quantity (`1Gi`, `500M`, `1073741824`) in bytes; null for anything else. */
export function quantityBytes(q: unknown): number | null {
  if (typeof q === 'number') return q;
  const m = typeof q === 'string' ? /^(\d+(?:\.\d+)?)([KMGTPE]i|[kMGTPE])?$/.exec(q.trim()) : null;
  const unit = m ? UNITS[m[2] ?? ''] : undefined;
  return m && unit !== undefined ? Math.round(Number(m[1]) * unit) : null;
}
