// Delete, pending first: `deleting` with its event once the cluster answers (unreachable:
// 503, nothing changed), then the teardown runs outside any transaction and ends in the
// soft-deleted `deleted`. A teardown a crash interrupted is finished by the reconciler.
import { crashPoint } from '@pier/kit';
import type { DatabaseRecord } from './database.ts';
import { events } from './events.ts';
import { sealArchive } from './backups.ts';
import { findDatabase, refOf, type DatabasesContext, type Scope } from './context.ts';

export async function deleteDatabase(ctx: DatabasesContext, scope: Scope, id: string): Promise<DatabaseRecord> {
  const found = await findDatabase(ctx, scope, id);
  if (found.status === 'deleting') return found;
  // Refuse before writing anything when the cluster is out of reach.
  await ctx.cluster.ping();
  const db = await ctx.locks.run(found.id, async () => {
    const current = await findDatabase(ctx, scope, id);
    if (current.status === 'deleting') return current;
    const next = await ctx.store.transaction(async (tx) => {
      const deleting = await tx.setStatus(current.id, 'deleting', null);
      await tx.event(events.statusChanged(deleting, current.status));
      return deleting;
    });
    ctx.eventsWritten();
    return next;
  });
  void teardown(ctx, db).catch((err) => ctx.log.warn({ err: String(err), id: db.id }, 'database teardown failed; the reconciler retries it'));
  return db;
}

/** Removes everything the database runs on, then soft-deletes the record. Idempotent. */
export function teardown(ctx: DatabasesContext, db: DatabaseRecord): Promise<void> {
  return ctx.locks.run(db.id, () => finishTeardown(ctx, db));
}

/** The teardown itself; the caller holds the database's lock (the reconciler does). */
export async function finishTeardown(ctx: DatabasesContext, db: DatabaseRecord): Promise<void> {
  await sealBeforeDelete(ctx, db);
  await ctx.cluster.delete(refOf(db));
  crashPoint('databases.teardown.deleted');
  const gone = await ctx.store.transaction(async (tx) => {
    const current = await tx.byId(db.id);
    if (current?.status !== 'deleting') return false;
    const deleted = await tx.setStatus(db.id, 'deleted', null);
    await tx.event(events.statusChanged(deleted, 'deleting'));
    await tx.event(events.deleted(deleted));
    return true;
  });
  if (gone) ctx.eventsWritten();
}

/**
 * The backups outlive the database (until purged): a postgresql archive sealed now makes
 * every instant until the delete recoverable, and that instant ends the recovery window
 * from then on. Best effort: a server that is not running has nothing more to archive.
 */
async function sealBeforeDelete(ctx: DatabasesContext, db: DatabaseRecord): Promise<void> {
  if (db.engine !== 'postgresql') return;
  try {
    const at = ctx.now();
    await sealArchive(ctx, db);
    await ctx.store.setArchivedUntil(db.id, at);
  } catch (err) {
    ctx.log.info({ err: String(err), id: db.id }, 'could not seal the archive before deleting; its recovery window ends at its last archived segment');
  }
}
