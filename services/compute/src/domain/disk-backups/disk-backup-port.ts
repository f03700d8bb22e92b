// A service's disk as disk backups see it, on either cluster: copied into the backup store
// (docker: a compressed archive of the named volume; kubernetes: a VolumeSnapshot of the
// claim) and restored into a new volume that then becomes the service's disk. The domain
// defines it; cluster/docker-disk-backups.ts and cluster/kubernetes-disk-backups.ts implement it.
import type { WorkloadRef, WorkloadSpec } from '../cluster-port.ts';

/** The service's disk: which service, and the volume (docker) or claim (kubernetes) that holds it now. */
export interface DiskRef extends WorkloadRef {
  /** Null: the one it was created with (docker `pier-disk-<id>`, kubernetes `<name>-disk`). */
  volume: string | null;
}

export interface DiskBackupPort {
  readonly kind: 'docker' | 'kubernetes';
  /**
   * Whether a backup under way goes on while compute restarts: a VolumeSnapshot is the
   * cluster's to finish, so it is followed again; a docker copy dies with its container.
   */
  readonly survivesRestart: boolean;
  /**
   * Takes the consistent copy, under the service's lock: docker pauses the service's running
   * containers while it archives the volume (they run again as soon as the archive is made);
   * kubernetes creates the VolumeSnapshot (crash-consistent, as the CSI driver takes it).
   */
  capture(disk: DiskRef, backupId: string, signal: AbortSignal): Promise<void>;
  /** Waits until the copy is kept (docker: stored; kubernetes: readyToUse), and tells its size. */
  complete(disk: DiskRef, backupId: string, signal: AbortSignal): Promise<{ sizeBytes: number | null }>;
  /** What an interrupted or failed backup left goes: replicas paused for it run again, partial copies are removed. */
  abandon(disk: DiskRef, backupId: string): Promise<void>;
  /** Deletes a backup from the store; one already gone is the goal too. */
  remove(disk: DiskRef, backupId: string): Promise<void>;
  /** The name of the volume a restore fills (a new one: the old disk stays until the restore is through). */
  restoreVolume(disk: DiskRef, restoreId: string): string;
  /**
   * Scales the service to zero (docker: its containers removed; kubernetes: the Deployment at
   * zero replicas, the CronJob suspended) and fills `volume` with the backup's contents.
   * Idempotent: a restore cut short is prepared again from the start.
   */
  prepareRestore(spec: WorkloadSpec, disk: DiskRef, backupId: string, volume: string, signal: AbortSignal): Promise<void>;
  /** Removes a volume the service no longer uses (null: the one it was created with); a missing one is the goal too. */
  removeVolume(disk: DiskRef, volume: string | null): Promise<void>;
}

/**
 * The backup itself failed, or cannot be restored (an archive missing from the store, a
 * snapshot the CSI driver reports an error for, a backup larger than the disk): its message
 * is the record's `error`. Any other failure (the cluster out of reach) is tried again.
 */
export class DiskBackupFailedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DiskBackupFailedError';
  }
}
