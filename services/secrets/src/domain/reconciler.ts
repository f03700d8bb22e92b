import { Periodic, type Logger } from '@pier/kit';
import type { SecretStorePort } from './store-port.ts';
import type { SecretsStore } from './records-port.ts';
import { deletedEvent } from './secret.ts';

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
    private readonly records: SecretsStore,
    private readonly store: SecretStorePort,
    private readonly log: Logger,
    private readonly onEvent: () => void,
    intervalMs: number,
    opts: ReconcilerOptions = {},
  ) {
    this.staleAfterMs = opts.staleAfterMs ?? 60_000;
    this.sweepEvery = opts.sweepEvery ?? 10;
    this.loop = new Periodic(() => this.runOnce(), intervalMs, {
      log: this.log,
      what: 'secrets reconcile pass',
      describe: (err) => ({ cause: this.store.describeError(err) }),
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
    for (const record of await this.records.stalePending(this.staleAfterMs)) {
      const id = { vpcId: record.vpcId, secretId: record.id };
      try {
        await this.store.delete(id);
      } catch (err) {
        this.log.warn({ secretId: record.id, cause: this.store.describeError(err) }, 'reconcile: secret store unreachable; will retry');
        continue;
      }
      if (record.state === 'creating') {
        if (await this.records.removeCreating(record.id)) report.undone++;
      } else if (await this.records.finishDelete(record.id, deletedEvent)) {
        report.deleted++;
      }
    }
    if (report.deleted > 0) this.onEvent();
    if (this.passes++ % this.sweepEvery === 0) report.swept = await this.sweep();
    if (report.undone || report.deleted || report.swept) this.log.info(report, 'reconciled secrets left pending');
    return report;
  }

  private async sweep(): Promise<number> {
    // What a write cut short left beside the objects (sealed values under a temporary name).
    const strays = (await this.store.removeStrays?.(this.staleAfterMs)) ?? 0;
    if (strays > 0) this.log.info({ strays }, 'removed temporary files an interrupted store write left');
    const objects = await this.store.list();
    if (objects.length === 0) return 0;
    const known = await this.records.existingIds(objects.map((o) => o.secretId));
    let swept = 0;
    for (const o of objects) {
      if (known.has(o.secretId)) continue;
      await this.store.delete(o);
      swept++;
    }
    return swept;
  }
}
