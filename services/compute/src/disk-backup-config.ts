// The settings of disk backups, part of compute's configuration (config.ts spreads them in).
import { z } from 'zod';
import type { RefinementCtx } from 'zod';

export const diskBackupEnv = {
  /**
   * docker: the named volume disk backups are kept in, at services/<service id>/<backup id>.tar.zst;
   * by default the databases' backup volume. Unused when an S3 store is configured.
   */
  PIER_COMPUTE_BACKUP_VOLUME: z
    .string()
    .regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/, 'PIER_COMPUTE_BACKUP_VOLUME must be a Docker volume name')
    .default('pier-database-backups'),
  /** docker: an S3-compatible store for disk backups instead of the volume: https endpoint, bucket (created by the operator), region, keys, a CA file to trust, and the key prefix. */
  PIER_COMPUTE_BACKUP_S3_ENDPOINT: z
    .string()
    .regex(/^https:\/\/[^/:]+(:\d+)?\/?$/, 'PIER_COMPUTE_BACKUP_S3_ENDPOINT must be https://host[:port]')
    .optional(),
  PIER_COMPUTE_BACKUP_S3_BUCKET: z.string().min(3, 'PIER_COMPUTE_BACKUP_S3_BUCKET must be a bucket name').optional(),
  PIER_COMPUTE_BACKUP_S3_REGION: z.string().min(1).default('us-east-1'),
  PIER_COMPUTE_BACKUP_S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  PIER_COMPUTE_BACKUP_S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  PIER_COMPUTE_BACKUP_S3_CA_FILE: z.string().min(1).optional(),
  /** Disk backups are `<prefix>/services/<service id>/<backup id>.tar.zst` in the bucket. */
  PIER_COMPUTE_BACKUP_S3_PREFIX: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_.-]*$/, 'PIER_COMPUTE_BACKUP_S3_PREFIX must be one path segment')
    .default('pier-compute'),
  /** docker: the image of the containers that copy disks (deploy/images/volume-tools, built locally). */
  PIER_COMPUTE_BACKUP_IMAGE: z.string().min(1).default('pier/volume-tools:1'),
  /** How often due backup schedules, retention and deleted services' backups are looked at (and restores held up resumed). */
  PIER_COMPUTE_BACKUP_INTERVAL_MS: z.coerce.number().int().min(100, 'PIER_COMPUTE_BACKUP_INTERVAL_MS must be at least 100 ms').default(30_000),
  /** kubernetes: the VolumeSnapshotClass of disk backups; unset, the cluster's default for the claim's driver. */
  PIER_COMPUTE_VOLUME_SNAPSHOT_CLASS: z.string().min(1).optional(),
};

const S3_REQUIRED = ['PIER_COMPUTE_BACKUP_S3_BUCKET', 'PIER_COMPUTE_BACKUP_S3_ACCESS_KEY_ID', 'PIER_COMPUTE_BACKUP_S3_SECRET_ACCESS_KEY'] as const;

/** An S3 store is all or nothing: an endpoint without its bucket or keys is a configuration error, named. */
export function checkDiskBackupEnv(env: Partial<Record<(typeof S3_REQUIRED)[number] | 'PIER_COMPUTE_BACKUP_S3_ENDPOINT', string>>, ctx: RefinementCtx): void {
  if (!env.PIER_COMPUTE_BACKUP_S3_ENDPOINT) return;
  for (const key of S3_REQUIRED) {
    if (!env[key]) ctx.addIssue({ code: 'custom', path: [key], message: `${key} is required with PIER_COMPUTE_BACKUP_S3_ENDPOINT` });
  }
}
