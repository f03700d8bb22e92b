// The background half of the databases service: what no request is waiting for, and what
// a crash left half done. Requests write pending state before they call the cluster, so
// whatever a crash interrupts is on record and is finished or undone here (kit's
// Reconciler runs the loop, the grace and the sweep's cadence; this file gives the steps):
//
//   invisible (unprovisioned) row   undone: cluster objects deleted, row deleted (no 202 was sent)
//   pending change on a row         finished: re-applied (apply converges), then committed
//   rule `adding`                   undone: the cluster given the set without it, row deleted
//   rule `removing`                 finished: the cluster given the set without it, row deleted
//   backup written pending          finished: started (a start of the same name does nothing), committed
//   backup marked deleting          finished: removed from the repository, record deleted
//   database `deleting`             finished: torn down, then soft-deleted
//   database `creating`             resynced, so `running` is published without a read
//   cluster objects without a live record (this installation's only): deleted
//
// Every step is idempotent, so a pass that fails (the cluster is away) is tried again at
// the next. Work on a database a request of this process is doing is left to it.
import { Reconciler, isUuid, pendingStep, type ReconcileTimes, type SettleEach } from '@pier/kit';
import type { DatabaseRecord } from './database.ts';
import type { DatabasesContext } from './context.ts';
import { undoProvision } from './provision.ts';
import { finishPendingChange } from './update.ts';
import { settlePendingRules } from './allowlist.ts';
import { finishTeardown } from './delete.ts';
import { finishBackupDelete, finishPendingBackup } from './backups.ts';
import { resynced } from './status-refresh.ts';

export function databasesReconciler(ctx: DatabasesContext, times: ReconcileTimes): Reconciler {
  const { store } = ctx;
  return new Reconciler(
    {
      steps: [
        pendingStep({
          what: 'undo a provision',
          pending: (before) => store.unprovisioned(before),
          key: (db) => db.id,
          settle: (db) => undoProvision(ctx, db),
        }),
        pendingStep({
          what: 'finish a change',
          pending: (before) => store.pendingChanges(before),
          key: (db) => db.id,
          settle: (db) => finishPendingChange(ctx, db.id),
        }),
        pendingStep({
          what: 'settle allowlist rules',
          // One settle per database: it gives the cluster the whole set at once.
          pending: async (before) => [...new Set((await store.pendingRules(before)).map((r) => r.databaseId))],
          key: (id) => id,
          settle: (id) => settlePendingRules(ctx, id),
        }),
        pendingStep({
          what: 'start a backup',
          pending: (before) => store.pendingBackups(before),
          key: (b) => b.databaseId,
          settle: (b) => finishPendingBackup(ctx, b),
        }),
        pendingStep({
          what: 'delete a backup',
          pending: (before) => store.deletingBackups(before),
          key: (b) => b.databaseId,
          settle: (b) => finishBackupDelete(ctx, b),
        }),
        pendingStep({
          what: 'tear down',
          // A delete answers 202 once `deleting` is committed: every one is the reconciler's to finish, young or not.
          pending: () => store.inStatus(['deleting']),
          key: (db) => db.id,
          settle: (db) => finishTeardown(ctx, db),
        }),
      ],
      observe: () => resyncCreating(ctx),
      sweep: (each) => sweep(ctx, each),
    },
    { service: 'databases', resources: 'databases', log: ctx.log, now: () => ctx.now(), locks: ctx.locks, ...times },
  );
}

/** Databases being created, one observe call per VPC. */
async function resyncCreating(ctx: DatabasesContext): Promise<void> {
  const byVpc = new Map<string, DatabaseRecord[]>();
  for (const db of await ctx.store.inStatus(['creating'])) byVpc.set(db.vpcId, [...(byVpc.get(db.vpcId) ?? []), db]);
  for (const [vpcId, records] of byVpc) {
    await resynced(ctx, vpcId, records).catch((err) => ctx.log.warn({ err: String(err), vpcId }, 'reconcile: status resync failed; will retry'));
  }
}

/**
 * Deletes cluster objects of this installation that no live record accounts for: what a
 * failed undo could not reach, or what a record soft-deleted before its objects went.
 * A provision writes its row before it calls the cluster, and a teardown deletes from
 * the cluster before it soft-deletes the row, so an object of a request in flight always
 * has its row.
 */
async function sweep(ctx: DatabasesContext, each: SettleEach): Promise<number> {
  const refs = (await ctx.cluster.list()).filter((r) => isUuid(r.id));
  if (refs.length === 0) return 0;
  const live = await ctx.store.liveIds(refs.map((r) => r.id));
  return each(
    'sweep an orphan',
    refs.filter((r) => !live.has(r.id)),
    (r) => r.id,
    async (ref) => {
      await ctx.cluster.delete(ref);
      ctx.log.info({ id: ref.id, vpcId: ref.vpcId }, 'removed cluster objects no database record accounts for');
    },
  );
}
