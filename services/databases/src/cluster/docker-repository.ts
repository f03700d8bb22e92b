import type Docker from 'dockerode';
import { s3ToolEnv } from '@pier/kit';
import type { Engine } from '../domain/database.ts';
import type { RestoreSpec } from '../domain/cluster-port.ts';
import type { S3Store } from './backup-store.ts';

// Where the docker adapter's databases keep their backups, and the environment that tells
// the images (deploy/images: pier-pg-lib.sh, pier-mariadb-lib.sh) so. One repository for
// all databases: a named volume by default, or an S3-compatible store; each database has a
// path of its own in it. Every managed PostgreSQL starts from one template cluster and so
// shares one system identifier: archives must never be pooled by it, only by path.

export type BackupRepository = { kind: 'volume'; volume: string } | { kind: 's3'; store: S3Store };

/** Where the images mount the repository volume. */
const MOUNT: Record<Engine, string> = { postgresql: '/var/lib/pgbackrest', mysql: '/var/lib/pier-backups' };

/** A database's own place in the repository (a directory of the volume, or a key prefix). */
export function repositoryPath(repo: BackupRepository, engine: Engine, databaseId: string): string {
  return repo.kind === 'volume' ? `${MOUNT[engine]}/${databaseId}` : `/${repo.store.prefix}/${databaseId}`;
}

/** The environment that points a container's backup tools at the database's repository. */
export function repositoryEnv(repo: BackupRepository, engine: Engine, databaseId: string): string[] {
  const env = [`PIER_BACKUP_REPO=${repo.kind}`, `PIER_BACKUP_PATH=${repositoryPath(repo, engine, databaseId)}`];
  if (repo.kind === 's3') env.push(...s3ToolEnv(repo.store));
  return env;
}

export function repositoryMounts(repo: BackupRepository, engine: Engine): Docker.MountConfig {
  return repo.kind === 'volume' ? [{ Type: 'volume', Source: repo.volume, Target: MOUNT[engine] }] : [];
}

/** pgBackRest's `--target` shape: `YYYY-MM-DD HH:MM:SS.mmm+00`. */
function pgBackRestTime(at: Date): string {
  return at.toISOString().replace('T', ' ').replace('Z', '+00');
}

/** The environment of a server made from a backup of `restore.source` (read on its first start only). */
export function restoreEnv(repo: BackupRepository, restore: RestoreSpec): string[] {
  const { source } = restore;
  const env = [`PIER_RESTORE_SOURCE_DB=${source.shortId}`, `PIER_RESTORE_PATH=${repositoryPath(repo, source.engine, source.id)}`];
  if (source.engine === 'mysql') return [...env, `PIER_RESTORE_NAME=${restore.backupName}`];
  if (restore.targetTime) {
    return [
      ...env,
      'PIER_RESTORE_TYPE=time',
      `PIER_RESTORE_TARGET=${pgBackRestTime(restore.targetTime)}`,
      ...(restore.backupRef ? [`PIER_RESTORE_SET=${restore.backupRef}`] : []),
    ];
  }
  return [...env, 'PIER_RESTORE_TYPE=immediate', `PIER_RESTORE_SET=${restore.backupRef}`];
}
