// PATCH: rename, resize, toggle external access; PATCH replicas (replicas.ts) makes its
// change the same way. A rename alone is one transaction. A change the cluster must make
// is recorded as pending on the row first (the new name with it), applied outside any
// transaction, and then committed with its `database.updated` event. A failed cluster
// call forgets it (503, nothing changed); a crash in between leaves it pending, and the
// reconciler finishes it, since apply converges. Changes to one database queue behind
// each other in this process (ctx.locks) rather than holding a row lock while a server
// restarts.
import { ConflictError, UnavailableError, crashPoint } from '@pier/kit';
import type { DatabaseRecord, PendingChange } from './database.ts';
import { resolveUpdate, touchesCluster, type UpdateInput } from './rules.ts';
import { events } from './events.ts';
import { activeCidrs, clusterView, convergeBack, findMutable, type DatabasesContext, type Scope } from './context.ts';

export async function updateDatabase(ctx: DatabasesContext, scope: Scope, id: string, input: UpdateInput): Promise<DatabaseRecord> {
  // Bad input is refused at once, not after the changes queued ahead of this one.
  const found = await findMutable(ctx, scope, id);
  resolveUpdate(found, input);
  return ctx.locks.run(found.id, async () => {
    const current = await findMutable(ctx, scope, id);
    const next = resolveUpdate(current, input);
    if (!touchesCluster(current, next)) return rename(ctx, current, next.name);
    if (next.externalAccessEnabled !== current.externalAccessEnabled && current.status === 'creating') {
      throw new ConflictError('external access can be changed once the database is running', 'database_not_running');
    }
    const change: PendingChange = {
      instanceType: next.instanceType,
      storageGb: next.storageGb,
      externalAccessEnabled: next.externalAccessEnabled,
      replicas: current.replicas,
    };
    return changeInCluster(ctx, current, change, next.name);
  });
}

/**
 * The pending-first write of a change the cluster must make: recorded as pending (with
 * `name`, which the cluster never sees), applied outside any transaction, committed with
 * its event. The caller holds the database's lock.
 */
export async function changeInCluster(ctx: DatabasesContext, current: DatabaseRecord, change: PendingChange, name = current.name): Promise<DatabaseRecord> {
  const pending = await ctx.store.beginChange(current.id, change, name);
  const allowlist = await activeCidrs(ctx, current.id);
  try {
    await ctx.cluster.apply(clusterView(pending, allowlist, change));
  } catch (err) {
    await abandonChange(ctx, current, allowlist, err);
    throw err;
  }
  crashPoint('databases.update.applied');
  return (await commitChange(ctx, current.id)) ?? current;
}

async function rename(ctx: DatabasesContext, current: DatabaseRecord, name: string): Promise<DatabaseRecord> {
  if (name === current.name) return current;
  const db = await ctx.store.transaction(async (tx) => {
    const renamed = await tx.rename(current.id, name);
    await tx.event(events.updated(renamed));
    return renamed;
  });
  ctx.eventsWritten();
  return db;
}

/** Makes the pending change the record's own, with its event; undefined when none was pending. */
async function commitChange(ctx: DatabasesContext, id: string): Promise<DatabaseRecord | undefined> {
  const db = await ctx.store.transaction(async (tx) => {
    const done = await tx.finishChange(id);
    if (done) await tx.event(events.updated(done));
    return done;
  });
  if (db) ctx.eventsWritten();
  return db;
}

/** After a failed cluster call: the record goes back to what it was, name included. */
async function abandonChange(ctx: DatabasesContext, before: DatabaseRecord, allowlist: string[], err: unknown): Promise<void> {
  try {
    await ctx.store.dropChange(before.id, before.name);
  } catch (e) {
    // Another database took the old name meanwhile: the new one stays, the rest goes back.
    if (!(e instanceof ConflictError)) throw e;
    await ctx.store.dropChange(before.id);
  }
  await convergeBack(ctx, before, allowlist, err);
}

/**
 * Finishes a change a crash left pending: re-applies it and commits it. A change the
 * cluster refuses is forgotten; an unreachable cluster is left for the next pass.
 */
export async function finishPendingChange(ctx: DatabasesContext, id: string): Promise<void> {
  const db = await ctx.store.byId(id);
  if (!db?.pendingChange) return;
  if (!db.provisioned || db.status === 'deleting') return ctx.store.dropChange(db.id);
  try {
    await ctx.cluster.apply(clusterView(db, await activeCidrs(ctx, db.id), db.pendingChange));
  } catch (err) {
    if (err instanceof UnavailableError) throw err;
    await ctx.store.dropChange(db.id);
    ctx.log.warn({ err: String(err), id: db.id }, 'dropped a pending change the cluster refuses');
    return;
  }
  if (await commitChange(ctx, db.id)) ctx.log.info({ id: db.id }, 'finished a change left pending');
}
