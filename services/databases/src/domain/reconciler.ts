// The background half of the databases service: what no request is waiting for, and what
// a crash left half done. Requests write pending state before they call the cluster, so
// whatever a crash interrupts is on record and is finished or undone here:
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
import { Periodic, isUuid } from '@pier/kit';
import type { DatabaseRecord } from './database.ts';
import type { DatabasesContext } from './context.ts';
import { undoProvision } from './provision.ts';
import { finishPendingChange } from './update.ts';
import { settlePendingRules } from './allowlist.ts';
import { finishTeardown } from './delete.ts';
import { finishBackupDelete, finishPendingBackup } from './backups.ts';
import { resynced } from './live-status.ts';

/** The sweep lists the whole cluster, so it runs at start-up and then every Nth pass. */
const SWEEP_EVERY = 10;

export class Reconciler {
  private readonly loop: Periodic;
  private passes = 0;

  constructor(
    private readonly ctx: DatabasesContext,
    intervalMs: number,
  ) {
    this.loop = new Periodic(() => this.pass(), intervalMs, { log: ctx.log, what: 'databases reconcile pass' });
  }

  /**
   * At start-up nothing can be in flight in this fresh process, so everything pending is a
   * crash's leftover: recovered at once, without waiting out the grace.
   */
  start(): void {
    this.loop.start(() => this.recover(this.ctx.now()));
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Settles once the start-up pass has run (kit's Background): a retried keyed create waits for it. */
  recovered(): Promise<void> {
    return this.loop.firstPass();
  }

  /** One pass: pending rows past the grace (a request may still hold younger ones). */
  pass(): Promise<void> {
    return this.recover(new Date(this.ctx.now().getTime() - this.ctx.deadlines.pendingGraceMs));
  }

  /** Settles what was left pending before `before`, then resyncs, tears down and sweeps. */
  async recover(before: Date): Promise<void> {
    const { store } = this.ctx;
    await this.each(
      'undo a provision',
      await store.unprovisioned(before),
      (db) => db.id,
      (db) => undoProvision(this.ctx, db),
    );
    await this.each(
      'finish a change',
      await store.pendingChanges(before),
      (db) => db.id,
      (db) => finishPendingChange(this.ctx, db.id),
    );
    const ruleDatabases = [...new Set((await store.pendingRules(before)).map((r) => r.databaseId))];
    await this.each(
      'settle allowlist rules',
      ruleDatabases,
      (id) => id,
      (id) => settlePendingRules(this.ctx, id),
    );
    await this.each(
      'start a backup',
      await store.pendingBackups(before),
      (b) => b.databaseId,
      (b) => finishPendingBackup(this.ctx, b),
    );
    await this.each(
      'delete a backup',
      await store.deletingBackups(before),
      (b) => b.databaseId,
      (b) => finishBackupDelete(this.ctx, b),
    );
    await this.each(
      'tear down',
      await store.inStatus(['deleting']),
      (db) => db.id,
      (db) => finishTeardown(this.ctx, db),
    );
    await this.resyncCreating();
    if (this.passes++ % SWEEP_EVERY === 0) await this.sweep();
  }

  /**
   * Runs `work` for each item under its database's lock, skipping databases a request is
   * working on; one failure does not hold up the rest, and is reported once per step.
   */
  private async each<T>(what: string, items: T[], idOf: (item: T) => string, work: (item: T) => Promise<void>): Promise<void> {
    const failures: { id: string; err: string }[] = [];
    for (const item of items) {
      const id = idOf(item);
      if (this.ctx.locks.busy(id)) continue;
      try {
        await this.ctx.locks.run(id, () => work(item));
      } catch (err) {
        failures.push({ id, err: String(err) });
      }
    }
    if (failures.length) this.ctx.log.warn({ failed: failures.length, first: failures[0] }, `reconcile: could not ${what}; will retry`);
  }

  /** Databases being created, one observe call per VPC. */
  private async resyncCreating(): Promise<void> {
    const byVpc = new Map<string, DatabaseRecord[]>();
    for (const db of await this.ctx.store.inStatus(['creating'])) byVpc.set(db.vpcId, [...(byVpc.get(db.vpcId) ?? []), db]);
    for (const [vpcId, records] of byVpc) {
      await resynced(this.ctx, vpcId, records).catch((err) => this.ctx.log.warn({ err: String(err), vpcId }, 'reconcile: status resync failed; will retry'));
    }
  }

  /**
   * Deletes cluster objects of this installation that no live record accounts for: what a
   * failed undo could not reach, or what a record soft-deleted before its objects went.
   * A provision writes its row before it calls the cluster, and a teardown deletes from
   * the cluster before it soft-deletes the row, so an object of a request in flight always
   * has its row.
   */
  private async sweep(): Promise<void> {
    const refs = (await this.ctx.cluster.list()).filter((r) => isUuid(r.id));
    if (refs.length === 0) return;
    const live = await this.ctx.store.liveIds(refs.map((r) => r.id));
    const orphans = refs.filter((r) => !live.has(r.id));
    await this.each(
      'sweep an orphan',
      orphans,
      (r) => r.id,
      async (ref) => {
        await this.ctx.cluster.delete(ref);
        this.ctx.log.info({ id: ref.id, vpcId: ref.vpcId }, 'removed cluster objects no database record accounts for');
      },
    );
  }
}
