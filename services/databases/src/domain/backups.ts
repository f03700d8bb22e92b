// A database's backups: listed as the backup repository holds them (resynced on every
// read, as status is from the cluster), taken on demand, deleted. Starting a backup is
// pending first: the record is written unstarted (its name taken), the cluster is asked
// to start it, and the record is made visible with `database.backup_started`. A crash in
// between is finished by the reconciler (starting the same name again does nothing).
import { ConflictError, NotFoundError, UnavailableError, crashPoint, type Page, type PageRequest } from '@pier/kit';
import type { DatabaseRecord } from './database.ts';
import { backupNameAt, type BackupMethod, type BackupRecord, type RecoveryWindow } from './backup-records.ts';
import type { RepositoryBackup, RepositoryListing } from './cluster-port.ts';
import { events } from './events.ts';
import { findMutable, findWithBackups, refOf, requireRunning, type DatabasesContext, type Scope } from './context.ts';

export const backupNotFound = () => new NotFoundError('backup not found', 'backup_not_found');

/** How long an archive may take to store the segment a seal switched out before it counts as stalled. */
const SEAL_TIMEOUT_MS = 60_000;

/** postgresql: every instant until now made recoverable from the archive (see PostgresSqlEngine). */
export async function sealArchive(ctx: DatabasesContext, db: DatabaseRecord): Promise<void> {
  await ctx.sql.postgresql.sealArchive(await ctx.cluster.sqlTarget(refOf(db)), SEAL_TIMEOUT_MS);
}

export interface BackupsView {
  page: Page<BackupRecord>;
  window: RecoveryWindow | null;
}

export async function listBackups(ctx: DatabasesContext, scope: Scope, id: string, page: PageRequest): Promise<BackupsView> {
  const db = await findWithBackups(ctx, scope, id);
  const synced = await resyncBackups(ctx, db);
  return { page: await ctx.store.backupPage(db.id, page), window: recoveryWindow(db, synced.backups, synced.listing, ctx.now()) };
}

export async function takeBackup(ctx: DatabasesContext, scope: Scope, id: string): Promise<BackupRecord> {
  const db = requireRunning(await findMutable(ctx, scope, id));
  return ctx.locks.run(db.id, async () => startBackup(ctx, requireRunning(await findMutable(ctx, scope, id)), 'manual'));
}

/**
 * Starts a backup of `db` (running); the caller holds the database's lock. One backup runs
 * at a time per database: another still running is a 409 naming it.
 */
export async function startBackup(ctx: DatabasesContext, db: DatabaseRecord, method: BackupMethod): Promise<BackupRecord> {
  const { backups } = await resyncBackups(ctx, db);
  const running = backups.find((b) => b.status === 'running');
  if (running) throw new ConflictError(`backup ${running.name} is still running; one backup runs at a time`, 'backup_in_progress');
  const row = await insertNamed(ctx, db, method);
  try {
    await ctx.cluster.startBackup(refOf(db), row.name, method);
  } catch (err) {
    await ctx.store.deleteBackupRow(row.id);
    throw err;
  }
  crashPoint('databases.backup.started');
  return commitStart(ctx, db, row.id);
}

/** The pending row, named for its start time; a name already taken (same second) gets a suffix. */
async function insertNamed(ctx: DatabasesContext, db: DatabaseRecord, method: BackupMethod): Promise<BackupRecord> {
  const base = backupNameAt(ctx.now());
  for (let n = 1; ; n++) {
    try {
      return await ctx.store.insertBackup(db.id, n === 1 ? base : `${base}-${n}`, method);
    } catch (err) {
      if (!(err instanceof ConflictError) || n >= 20) throw err;
    }
  }
}

async function commitStart(ctx: DatabasesContext, db: DatabaseRecord, backupId: string): Promise<BackupRecord> {
  const b = await ctx.store.transaction(async (tx) => {
    const started = await tx.markBackupStarted(backupId);
    await tx.event(events.backupStarted(db, started));
    return started;
  });
  ctx.eventsWritten();
  return b;
}

/**
 * Finishes a backup start a crash left pending (the reconciler, holding the lock): asked
 * of the cluster again (a start of the same name does nothing) and committed; one of a
 * database that can no longer back up is dropped.
 */
export async function finishPendingBackup(ctx: DatabasesContext, pending: BackupRecord): Promise<void> {
  const current = await ctx.store.backupByName(pending.databaseId, pending.name);
  if (!current || current.started) return;
  const db = await ctx.store.byId(pending.databaseId);
  if (!db?.provisioned || db.status !== 'running') {
    await ctx.store.deleteBackupRow(pending.id);
    return;
  }
  await ctx.cluster.startBackup(refOf(db), pending.name, pending.method);
  await commitStart(ctx, db, pending.id);
  ctx.log.info({ id: db.id, backup: pending.name }, 'finished a backup start left pending');
}

export interface Resynced {
  /** The database's backups after the resync, newest first. */
  backups: BackupRecord[];
  listing: RepositoryListing;
}

/**
 * Brings the records in line with the repository: finished backups complete or fail
 * (with their event), backups the repository holds but no record knows are recorded, and
 * finished ones it no longer holds read `failed`. A repository that cannot be read is a
 * 503: "could not look" must never read as "gone". Concurrent readers write each change
 * once (compare-and-set on the status).
 */
export async function resyncBackups(ctx: DatabasesContext, db: DatabaseRecord): Promise<Resynced> {
  // The records first, the repository after: every record judged existed before the
  // listing was taken (a started backup is in its server's states before its record
  // commits), so a listing older than a record can neither miss it nor move it backwards.
  const records = await ctx.store.backups(db.id);
  const listing = await ctx.cluster.listBackups(refOf(db));
  if (!listing.readable) {
    throw new UnavailableError(`the backup repository cannot be read: ${listing.error ?? 'no reason given'}`, 'backup_repository_unavailable');
  }
  const inRepository = new Map(listing.backups.map((b) => [b.name, b]));
  const known = new Set(records.map((r) => r.name));
  const finished: BackupRecord[] = [];
  for (const r of records) {
    const seen = inRepository.get(r.name);
    // A finished backup never runs again, whatever an older listing may say.
    if (seen?.status === 'running' && r.status !== 'running') continue;
    const sync = seen
      ? { status: seen.status, sizeBytes: seen.sizeBytes, completedAt: seen.completedAt, error: seen.error, ref: seen.ref }
      : r.status === 'failed'
        ? null
        : {
            status: 'failed' as const,
            sizeBytes: r.sizeBytes,
            completedAt: r.completedAt ?? ctx.now(),
            error: r.status === 'running' ? 'interrupted: the database server stopped during the backup' : 'no longer in the backup repository',
            ref: r.ref,
          };
    if (!sync || !differs(r, sync)) continue;
    const updated = await ctx.store.syncBackup(r.id, r.status, sync);
    if (updated && updated.status !== r.status) finished.push(updated);
  }
  for (const b of listing.backups) {
    // A name with a pending record belongs to a request still in flight.
    if (known.has(b.name) || (await ctx.store.backupByName(db.id, b.name))) continue;
    const adopted = await ctx.store.adoptBackup(db.id, adoptable(b));
    if (adopted && adopted.status !== 'running') finished.push(adopted);
  }
  if (finished.length) {
    await ctx.store.transaction(async (tx) => {
      for (const b of finished) await tx.event(events.backupFinished(db, b));
    });
    ctx.eventsWritten();
  }
  return { backups: await ctx.store.backups(db.id), listing };
}

function differs(r: BackupRecord, sync: Pick<BackupRecord, 'status' | 'sizeBytes' | 'completedAt' | 'error' | 'ref'>): boolean {
  return (
    r.status !== sync.status ||
    r.sizeBytes !== sync.sizeBytes ||
    r.completedAt?.getTime() !== sync.completedAt?.getTime() ||
    r.error !== sync.error ||
    r.ref !== sync.ref
  );
}

function adoptable(b: RepositoryBackup) {
  return { ...b, method: b.method ?? 'manual' };
}

/**
 * The span a postgresql restore's `target_time` may take: from just after the oldest
 * completed backup ended (recovery must first reach a consistent state) to now while the
 * server archives, else as far as the archive is known to reach. Null for mysql and
 * while no backup has completed.
 */
export function recoveryWindow(db: DatabaseRecord, backups: BackupRecord[], listing: RepositoryListing, now: Date): RecoveryWindow | null {
  if (db.engine !== 'postgresql') return null;
  const ends = backups.filter((b) => b.status === 'completed' && b.completedAt).map((b) => b.completedAt!.getTime());
  if (ends.length === 0) return null;
  // Backup end times are whole seconds: a target in that same second could precede consistency.
  const earliest = Math.min(...ends) + 1000;
  const reached = Math.max(...ends, listing.archivedUntil?.getTime() ?? 0, db.archivedUntil?.getTime() ?? 0);
  const latest = listing.archiving && !db.deletedAt ? now.getTime() : reached;
  if (latest < earliest) return null;
  return { earliest: new Date(earliest), latest: new Date(latest) };
}

export async function deleteBackup(ctx: DatabasesContext, scope: Scope, id: string, name: string): Promise<void> {
  const found = await findMutable(ctx, scope, id);
  await ctx.locks.run(found.id, async () => {
    const db = await findMutable(ctx, scope, id);
    const { backups } = await resyncBackups(ctx, db);
    const backup = backups.find((b) => b.name === name);
    if (!backup) throw backupNotFound();
    if (backup.status === 'running') throw new ConflictError(`backup ${name} is still running; delete it once it has finished`, 'backup_in_progress');
    await refuseNeeded(ctx, db, backup, backups);
    await removeBackup(ctx, db, backup);
  });
}

/**
 * What a backup is needed for, refused as a 409: the newest completed postgresql backup
 * (the recovery window and the archive after it depend on it, and pgBackRest keeps it
 * until a newer one exists), and any backup of a database still being restored from.
 */
export async function refuseNeeded(ctx: DatabasesContext, db: DatabaseRecord, backup: BackupRecord, backups: BackupRecord[]): Promise<void> {
  if (backup.status !== 'completed') return;
  const newest = backups.find((b) => b.status === 'completed');
  if (db.engine === 'postgresql' && newest?.id === backup.id) {
    throw new ConflictError(
      `backup ${backup.name} is the newest completed backup: point-in-time recovery depends on it; take a newer backup first`,
      'backup_required',
    );
  }
  const restoring = await ctx.store.restoringFrom(db.id);
  if (restoring.length) {
    throw new ConflictError(`database ${restoring[0]!.name} is being restored from this database's backups; delete once it is running`, 'backup_in_use');
  }
}

/**
 * Deletes a finished backup, pending first: hidden (marked deleting), removed from the
 * repository outside any transaction, then its record goes with `database.backup_deleted`.
 * A failed cluster call shows it again; a crash in between is finished by the reconciler.
 * The caller holds the database's lock.
 */
export async function removeBackup(ctx: DatabasesContext, db: DatabaseRecord, backup: BackupRecord): Promise<void> {
  const marked = await ctx.store.beginBackupDelete(backup.id);
  if (!marked) throw backupNotFound();
  try {
    await ctx.cluster.deleteBackup(refOf(db), { name: backup.name, ref: backup.ref });
  } catch (err) {
    await ctx.store.cancelBackupDelete(backup.id);
    throw err;
  }
  crashPoint('databases.backup.deleted');
  await finishDelete(ctx, db, marked);
}

async function finishDelete(ctx: DatabasesContext, db: DatabaseRecord, backup: BackupRecord): Promise<void> {
  await ctx.store.transaction(async (tx) => {
    if (await tx.deleteBackupRow(backup.id)) await tx.event(events.backupDeleted(db, backup));
  });
  ctx.eventsWritten();
}

/** Finishes a backup deletion a crash interrupted (the reconciler, holding the lock). */
export async function finishBackupDelete(ctx: DatabasesContext, backup: BackupRecord): Promise<void> {
  const db = await ctx.store.byId(backup.databaseId);
  const current = await ctx.store.backupByName(backup.databaseId, backup.name);
  if (!db || !current?.deletingSince) return;
  await ctx.cluster.deleteBackup(refOf(db), { name: current.name, ref: current.ref });
  await finishDelete(ctx, db, current);
}
