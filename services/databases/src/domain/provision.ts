// Provisioning, and the creation of a database from a backup (restore.ts), pending first:
// the row is written invisible (so a duplicate name is a 409 before the cluster is
// touched), the cluster is asked outside any transaction, and one transaction then makes
// the database visible together with its schedule and its `database.created` event. A
// failed cluster call removes the row again (503, no record, no event); a crash in
// between leaves the invisible row, which the reconciler undoes.
import { randomUUID } from 'node:crypto';
import { crashPoint, nextFireTime } from '@pier/kit';
import { shortIdOf, type DatabaseRecord, type RestoreSource } from './database.ts';
import { defaultSchedule, RETENTION_COUNT } from './backup-records.ts';
import { resolveProvision, type ProvisionInput, type ProvisionSpec } from './rules.ts';
import { ShortIdTaken } from './errors.ts';
import { events } from './events.ts';
import { clusterView, refOf, type DatabasesContext, type Scope } from './context.ts';

/** Draws of a fresh UUID when its short id is taken by a live database. */
const SHORT_ID_ATTEMPTS = 5;

export function provisionDatabase(ctx: DatabasesContext, scope: Scope, input: ProvisionInput): Promise<DatabaseRecord> {
  return createDatabase(ctx, scope, resolveProvision(input, ctx.cluster.capabilities), null);
}

/** A new database of `spec` in `scope`, empty or made from another's backup (`source`). */
export async function createDatabase(ctx: DatabasesContext, scope: Scope, spec: ProvisionSpec, source: RestoreSource | null): Promise<DatabaseRecord> {
  for (let attempt = 1; ; attempt++) {
    const id = randomUUID();
    // Held from before the row exists, so the reconciler never takes a request's own row for a crash's.
    const done = await ctx.locks.run(id, async () => {
      let row: DatabaseRecord;
      try {
        row = await ctx.store.insertUnprovisioned({
          id,
          shortId: shortIdOf(id),
          workspaceId: scope.workspaceId,
          vpcId: scope.vpcId,
          ...spec,
          restoreSource: source,
        });
      } catch (err) {
        if (err instanceof ShortIdTaken && attempt < SHORT_ID_ATTEMPTS) return undefined;
        throw err;
      }
      return provisionRow(ctx, row);
    });
    if (done) return done;
  }
}

async function provisionRow(ctx: DatabasesContext, row: DatabaseRecord): Promise<DatabaseRecord> {
  try {
    await ctx.cluster.apply(clusterView(row, []));
  } catch (err) {
    await ctx.store.deleteUnprovisioned(row.id);
    // Whatever the cluster got before it failed goes too, if it can be reached at all;
    // what it cannot reach now the reconciler's sweep removes later.
    await ctx.cluster.delete(refOf(row)).catch((e) => ctx.log.warn({ err: String(e), id: row.id }, 'cleanup after a failed provision failed'));
    throw err;
  }
  crashPoint('databases.provision.applied');
  const db = await ctx.store.transaction(async (tx) => {
    const visible = await tx.markProvisioned(row.id);
    // Backed up from the start, on the documented default schedule.
    const schedule = defaultSchedule(visible.id);
    await tx.putSchedule({
      databaseId: visible.id,
      schedule,
      retentionCount: RETENTION_COUNT.default,
      enabled: true,
      nextRunAt: nextFireTime(schedule, ctx.now()),
    });
    await tx.event(events.created(visible));
    return visible;
  });
  // Committed `creating`, the client not answered: the reconciler's resync publishes `running`.
  crashPoint('databases.provision.committed');
  ctx.eventsWritten();
  return db;
}

/**
 * Undoes a provision whose outcome never committed (the client got no 202): its cluster
 * objects go, then the row. The reconciler calls it, holding the database's lock, for
 * invisible rows past the grace.
 */
export async function undoProvision(ctx: DatabasesContext, row: DatabaseRecord): Promise<void> {
  // Read again under the lock: the request may have committed since the row was listed.
  const current = await ctx.store.byId(row.id);
  if (!current || current.provisioned) return;
  await ctx.cluster.delete(refOf(row));
  if (await ctx.store.deleteUnprovisioned(row.id)) ctx.log.info({ id: row.id, name: row.name }, 'removed a database whose provisioning never finished');
}
