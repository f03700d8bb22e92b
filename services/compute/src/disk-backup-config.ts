// The settings of disk backups, part of compute's configuration (config.ts spreads them in).
import { z } from 'zod';
import type { RefinementCtx } from 'zod';
import { checkS3StoreEnv, s3StoreEnv } from '@pier/kit';

/** The variables' common prefix of the disk backups' S3 store. */
export const S3 = 'PIER_COMPUTE_BACKUP_S3';

export const diskBackupEnv = {
  /**
   * docker: the named volume disk backups are kept in, at services/<service id>/<backup id>.tar.zst;
   * by default the databases' backup volume. Unused when an S3 store is configured.
   */
  PIER_COMPUTE_BACKUP_VOLUME: z
    .string()
    .regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/, 'PIER_COMPUTE_BACKUP_VOLUME must be a Docker volume name')
    .default('pier-database-backups'),
  /**
   * docker: an S3-compatible store for disk backups instead of the volume; kubernetes: where
   * archived disk backups go (PIER_COMPUTE_DISK_BACKUP_METHOD=archive). Kit's s3StoreEnv:
   * PIER_COMPUTE_BACKUP_S3_ENDPOINT, _BUCKET, _REGION, _ACCESS_KEY_ID, _SECRET_ACCESS_KEY,
   * _CA_FILE, _PREFIX). Disk backups are `<prefix>/services/<service id>/<backup id>.tar.zst`
   * in the bucket.
   */
  ...s3StoreEnv(S3, 'pier-compute'),
  /** The image of the containers (docker) and Jobs (kubernetes, archive) that copy disks: deploy/images/volume-tools, built locally. */
  PIER_COMPUTE_BACKUP_IMAGE: z.string().min(1).default('pier/volume-tools:1'),
  /** How often due backup schedules, retention and deleted services' backups are looked at (and restores held up resumed). */
  PIER_COMPUTE_BACKUP_INTERVAL_MS: z.coerce.number().int().min(100, 'PIER_COMPUTE_BACKUP_INTERVAL_MS must be at least 100 ms').default(30_000),
  /** kubernetes: the VolumeSnapshotClass of disk backups; unset, the cluster's default for the claim's driver. */
  PIER_COMPUTE_VOLUME_SNAPSHOT_CLASS: z.string().min(1).optional(),
  /**
   * kubernetes: how disk backups are taken. `snapshot`: a VolumeSnapshot of the claim (the
   * storage's CSI driver must take snapshots; crash-consistent). `archive`: the docker
   * adapter's archive into the S3 store, made by a Job that mounts the claim (any storage;
   * the service runs on while it is copied). Unset: `archive` when an S3 store is
   * configured, `snapshot` otherwise.
   */
  PIER_COMPUTE_DISK_BACKUP_METHOD: z.enum(['snapshot', 'archive'], { error: 'PIER_COMPUTE_DISK_BACKUP_METHOD must be snapshot or archive' }).optional(),
};

/** An S3 store is all or nothing: an endpoint without its bucket or keys is a configuration error, named. */
export function checkDiskBackupEnv(env: Record<string, unknown>, ctx: RefinementCtx): void {
  checkS3StoreEnv(S3, env, ctx);
  if (env.PIER_COMPUTE_DISK_BACKUP_METHOD === 'archive' && !env[`${S3}_ENDPOINT`]) {
    ctx.addIssue({
      code: 'custom',
      path: ['PIER_COMPUTE_DISK_BACKUP_METHOD'],
      message: `PIER_COMPUTE_DISK_BACKUP_METHOD=archive needs the S3 store the archives go to (${S3}_ENDPOINT, _BUCKET and its keys)`,
    });
  }
}
