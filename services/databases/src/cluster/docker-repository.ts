import type Docker from 'dockerode';
import { s3ToolEnv } from '@pier/kit';
import type { Engine } from '../domain/database.ts';
import type { RestoreSpec } from '../domain/cluster-port.ts';
import type { S3Store } from './backup-store.ts';

// Where the docker adapter's databases keep their backups, and the environment that tells
// the images (deploy/images: pier-pg-lib.sh, pier-mariadb-lib.sh) so: named volumes by
// default, or an S3-compatible store where each database has a key prefix of its own.
// Every managed PostgreSQL starts from one template cluster and so shares one system
// identifier: archives must never be pooled by it, only by place.
//
// On volumes, each database has a volume of its own, `pier-db-<id>-backups`, and its
// containers mount that one: code run inside one tenant's server finds no other tenant's
// backups. (They used to share one volume, `PIER_DATABASES_BACKUP_VOLUME`, a directory
// each; what is left there is moved into the database's own volume, see docker.ts.) A
// restore or fork mounts its source's volume read-only, and only until the restore is
// done (docker.ts recreates the server without it).

export type BackupRepository = { kind: 'volume'; volume: string } | { kind: 's3'; store: S3Store };

/** Where the images keep the repository; a database's own volume is mounted there. */
const MOUNT: Record<Engine, string> = { postgresql: '/var/lib/pgbackrest', mysql: '/var/lib/pier-backups' };
/** Where a restoring server finds its source's volume (read-only). */
const SOURCE_MOUNT = '/var/lib/pier-restore-source';

/** A database's own place in the repository: its volume's root, or its key prefix. */
export function repositoryPath(repo: BackupRepository, engine: Engine, databaseId: string): string {
  return repo.kind === 'volume' ? MOUNT[engine] : `/${repo.store.prefix}/${databaseId}`;
}

/** The environment that points a container's backup tools at the database's repository. */
export function repositoryEnv(repo: BackupRepository, engine: Engine, databaseId: string): string[] {
  const env = [`PIER_BACKUP_REPO=${repo.kind}`, `PIER_BACKUP_PATH=${repositoryPath(repo, engine, databaseId)}`];
  if (repo.kind === 's3') env.push(...s3ToolEnv(repo.store));
  return env;
}

/** Database `databaseId`'s own repository volume. */
export const repositoryVolumeName = (databaseId: string) => `pier-db-${databaseId}-backups`;

/** The label naming whose repository a volume is (not `pier.database`: backups outlive their database). */
export const BACKUPS_OF_LABEL = 'pier.backups-of';

/** The label on a server that mounts a restore's source repository (dropped once restored). */
export const RESTORE_SOURCE_LABEL = 'pier.restore-source';

/** The database's own repository volume, where its images look for it. */
export function repositoryMounts(repo: BackupRepository, engine: Engine, databaseId: string): Docker.MountConfig {
  if (repo.kind !== 'volume') return [];
  return [{ Type: 'volume', Source: repositoryVolumeName(databaseId), Target: MOUNT[engine] }];
}

/** A restore's source repository, read-only, where PIER_RESTORE_PATH says. */
export function restoreMounts(repo: BackupRepository, restore: RestoreSpec): Docker.MountConfig {
  if (repo.kind !== 'volume') return [];
  return [{ Type: 'volume', Source: repositoryVolumeName(restore.source.id), Target: SOURCE_MOUNT, ReadOnly: true }];
}

/** The images' server user, owner of the repository's files. */
export const REPOSITORY_OWNER: Record<Engine, string> = { postgresql: 'postgres:postgres', mysql: 'mysql:mysql' };

/** pgBackRest's `--target` shape: `YYYY-MM-DD HH:MM:SS.mmm+00`. */
function pgBackRestTime(at: Date): string {
  return at.toISOString().replace('T', ' ').replace('Z', '+00');
}

/** The environment of a server made from a backup of `restore.source` (read on its first start only). */
export function restoreEnv(repo: BackupRepository, restore: RestoreSpec): string[] {
  const { source } = restore;
  const path = repo.kind === 'volume' ? SOURCE_MOUNT : repositoryPath(repo, source.engine, source.id);
  const env = [`PIER_RESTORE_SOURCE_DB=${source.shortId}`, `PIER_RESTORE_PATH=${path}`];
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
