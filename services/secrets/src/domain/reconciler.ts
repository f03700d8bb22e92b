import { Periodic } from '@pier/kit';
import type { SecretsContext } from './context.ts';
import { removeDeleted } from './delete-secret.ts';

export interface ReconcileReport {
  /** `creating` records undone: the caller never got a 201, so the create is rolled back. */
  undone: number;
  /** `deleting` records finished: the caller asked for the delete, so it is completed. */
  deleted: number;
  /** Store objects without any record (a create whose undo could not reach the store). */
  swept: number;
}

export interface ReconcilerOptions {
  /**
   * A pending record younger than this may belong to a request still in flight; it is left
   * alone. Well above the store call deadline (10 s), so only abandoned records qualify.
   */
  staleAfterMs?: number;
  /** The sweep lists the whole store, so it runs on start-up and then every Nth pass. */
  sweepEvery?: number;
}

/**
 * Finishes what a crash interrupted. A `creating` record is undone (its values cannot be
 * recovered from our side, and the caller saw no success); a `deleting` record is
 * finished. Then objects in the store that no record accounts for are removed.
 */
export class Reconciler {
  private readonly loop: Periodic;
  private running?: Promise<ReconcileReport>;
  private passes = 0;
  private readonly staleAfterMs: number;
  private readonly sweepEvery: number;

  constructor(
    private readonly ctx: SecretsContext,
    intervalMs: number,
    opts: ReconcilerOptions = {},
  ) {
    this.staleAfterMs = opts.staleAfterMs ?? 60_000;
    this.sweepEvery = opts.sweepEvery ?? 10;
    this.loop = new Periodic(() => this.runOnce(), intervalMs, {
      log: ctx.log,
      what: 'secrets reconcile pass',
      describe: (err) => ({ cause: ctx.cluster.describeError(err) }),
    });
  }

  /** One pass now (joins a pass already running). */
  runOnce(): Promise<ReconcileReport> {
    this.running ??= this.pass().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** A pass now, then one every interval. Failures are logged and retried next time. */
  start(): void {
    this.loop.start(() => this.runOnce());
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  private async pass(): Promise<ReconcileReport> {
    const report: ReconcileReport = { undone: 0, deleted: 0, swept: 0 };
    const { store, cluster, log } = this.ctx;
    for (const record of await store.stalePending(this.staleAfterMs)) {
      const id = { vpcId: record.vpcId, secretId: record.id };
      try {
        await cluster.delete(id);
      } catch (err) {
        log.warn({ secretId: record.id, cause: cluster.describeError(err) }, 'reconcile: secret store unreachable; will retry');
        continue;
      }
      if (record.state === 'creating') {
        if (await store.removeCreating(record.id)) report.undone++;
      } else if (await removeDeleted(this.ctx, record.id)) {
        report.deleted++;
      }
    }
    if (report.deleted > 0) this.ctx.eventsWritten();
    if (this.passes++ % this.sweepEvery === 0) report.swept = await this.sweep();
    if (report.undone || report.deleted || report.swept) log.info(report, 'reconciled secrets left pending');
    return report;
  }

  private async sweep(): Promise<number> {
    const { store, cluster, log } = this.ctx;
    // What a write cut short left beside the objects (sealed values under a temporary name).
    const strays = (await cluster.removeStrays?.(this.staleAfterMs)) ?? 0;
    if (strays > 0) log.info({ strays }, 'removed temporary files an interrupted store write left');
    const objects = await cluster.list();
    if (objects.length === 0) return 0;
    const known = await store.existingIds(objects.map((o) => o.secretId));
    let swept = 0;
    for (const o of objects) {
      if (known.has(o.secretId)) continue;
      await cluster.delete(o);
      swept++;
    }
    return swept;
  }
}
