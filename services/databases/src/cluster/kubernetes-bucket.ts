import type { ClusterRef } from '../domain/cluster-port.ts';
import type { S3Store } from './backup-store.ts';
import type { S3Objects } from './s3-objects.ts';
import { mocoPrefix, repositoryPrefix } from './kubernetes-backups.ts';
import { names } from './kubernetes-meta.ts';

// Deleting backups from the bucket in the layouts the operators write. Neither operator
// deletes backup data itself: a CloudNativePG Backup object's deletion leaves its base
// backup in place, and MOCO never deletes.
//
//   CloudNativePG (barman-cloud)  <prefix>/<database id>/<server>/base/<backup id>/...
//                                 <prefix>/<database id>/<server>/wals/<timeline+log>/<segment>[.gz]
//   MOCO                          moco/<namespace>/<cluster>/<YYYYMMDD-hhmmss>/{dump.tar,binlog.tar.zst}

/** barman's `backup.info`: `key=value` lines. */
export function parseBackupInfo(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

const serverPrefix = (store: S3Store, db: ClusterRef) => `${repositoryPrefix(store, db.id)}${names(db.shortId).cluster}/`;

/** A WAL segment's (or its `.backup` label's) 24-hex name; history files have none. */
const SEGMENT = /^[0-9A-F]{24}/;

/**
 * Removes one base backup, then the WAL segments older than the oldest completed base
 * backup left (what barman-cloud-backup-delete does): no recovery can start before that
 * backup, so they serve none. With no completed base backup left the archive is kept.
 */
export async function deleteCnpgBackup(s3: S3Objects, store: S3Store, db: ClusterRef, backupId: string): Promise<void> {
  if (!/^[0-9A-Za-z_-]+$/.test(backupId)) throw new Error(`"${backupId}" is not a barman backup id`);
  const server = serverPrefix(store, db);
  await s3.removePrefix(`${server}base/${backupId}/`);
  let oldest: string | undefined;
  for (const id of await s3.children(`${server}base/`)) {
    const text = await s3.read(`${server}base/${id}/backup.info`);
    const info = text ? parseBackupInfo(text) : {};
    const begin = info.begin_wal;
    if (info.status === 'DONE' && begin && SEGMENT.test(begin) && (!oldest || begin < oldest)) oldest = begin;
  }
  if (!oldest) return;
  const below = oldest.slice(0, 24);
  const doomed = (await s3.list(`${server}wals/`))
    .map((o) => o.key)
    .filter((key) => {
      const file = key.slice(key.lastIndexOf('/') + 1);
      return SEGMENT.test(file) && file.slice(0, 24) < below;
    });
  await s3.remove(doomed);
}

/** `YYYYMMDD-hhmmss` (MOCO's folder names, UTC) as a time. */
export function mocoFolderTime(folder: string): Date | null {
  const m = /^(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})$/.exec(folder);
  return m ? new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!)) : null;
}

/**
 * Removes the MOCO backups whose folder time lies within [from, to]: the span of the Job
 * that took one (MOCO names the folder by its own clock when the backup starts). One
 * backup runs at a time, so no other backup's folder falls in that span.
 */
export async function deleteMocoBackups(s3: S3Objects, db: ClusterRef, from: Date, to: Date): Promise<void> {
  const prefix = mocoPrefix(db);
  const start = Math.floor(from.getTime() / 1000) * 1000;
  for (const folder of await s3.children(prefix)) {
    const at = mocoFolderTime(folder)?.getTime();
    if (at !== undefined && at >= start && at <= to.getTime()) await s3.removePrefix(`${prefix}${folder}/`);
  }
}

/** Everything a database ever stored: its repository, and MOCO's folder of its cluster. */
export async function purgeRepository(s3: S3Objects, store: S3Store, db: ClusterRef): Promise<void> {
  await s3.removePrefix(repositoryPrefix(store, db.id));
  if (db.engine === 'mysql') await s3.removePrefix(mocoPrefix(db));
}
