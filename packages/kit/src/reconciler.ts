// The background half of every service that writes pending state before it calls the
// cluster (CONTRIBUTING: pending first). A service gives only what to look at and how to
// settle it, as crossplane-runtime's managed reconciler takes observe/create/delete from a
// provider; this file owns when: the loop, the start-up pass, the grace, the sweep's
// cadence and the clock. Every pass is idempotent, so a pass that fails (the cluster is
// away) is simply tried again at the next.
import type { KeyedMutex } from './locks.ts';
import type { Logger } from './logger.ts';
import { Periodic } from './periodic.ts';

/** One kind of pending state a crash can leave between the steps of a request. */
export interface PendingStep<T> {
  /** What settling one item does, for the log ("undo a provision", "finish a rollout"). */
  what: string;
  /** The items left pending before `before`. */
  pending(before: Date): Promise<T[]>;
  /** The resource an item belongs to: the key a request of it locks. */
  key(item: T): string;
  /** Finishes or undoes one item, its key's lock held; resolving `false` means nothing was left to do. */
  settle(item: T): Promise<unknown>;
}

/** Lets TypeScript infer a step's item type where a list of steps is written. */
export function pendingStep<T>(step: PendingStep<T>): PendingStep<unknown> {
  return step as PendingStep<unknown>;
}

/**
 * Settles each item under its key's lock, skipping keys a request of this process holds
 * (what that request leaves is its own to settle); one failure does not hold up the rest,
 * and is reported once for the lot. Resolves how many were settled.
 */
export type SettleEach = <T>(what: string, items: T[], key: (item: T) => string, settle: (item: T) => Promise<unknown>) => Promise<number>;

/** What a service gives: its functions, never its loop. */
export interface ReconcilerParts {
  /** Every pass: what a request does not wait for (statuses of rollouts in progress, say). */
  observe?(): Promise<void>;
  /** Pending state, oldest kind first: each item is finished or undone. */
  steps: PendingStep<unknown>[];
  /**
   * At start-up and every `sweepEveryMs`: cluster objects no record accounts for. Listing
   * the whole cluster is costly, hence its own cadence. May resolve how many it removed.
   */
  sweep?(each: SettleEach): Promise<number | void>;
}

export interface ReconcilerSettings {
  /** The service, for the loop's log lines ("<service> reconcile pass failed"). */
  service: string;
  /** What it settles, for the summary line ("reconciled <resources> left pending"). */
  resources: string;
  log: Logger;
  /** The clock (the context's `now`), so a test can move time instead of waiting. */
  now(): Date;
  /** The keyed lock requests take (`ctx.locks`); without one, items are settled as they come. */
  locks?: KeyedMutex;
  /** Between the end of a pass and the start of the next. */
  intervalMs: number;
  /** A pending item younger than this may belong to a request in flight: it is left alone. */
  graceMs: number;
  sweepEveryMs: number;
  /**
   * True (the default) when one process serves the service (compute, databases): at
   * start-up nothing of this process can be in flight, so everything pending is a crash's
   * and is settled at once. A service that may run beside a sibling (secrets) cannot tell
   * the sibling's requests from a crash's leftovers and keeps the grace at start-up too.
   */
  soleInstance?: boolean;
  /** The fields that describe a failure in the log (default `{ err: String(err) }`): a store's errors may echo what it was sent. */
  describe?: (err: unknown) => Record<string, unknown>;
}

/** The settings a service reads from its environment; the rest it wires itself. */
export type ReconcileTimes = Pick<ReconcilerSettings, 'intervalMs' | 'graceMs' | 'sweepEveryMs'>;

/** What one pass did. */
export interface ReconcileReport {
  /** Items settled, by step (`what`). */
  settled: Record<string, number>;
  /** Items that failed and are tried again at the next pass. */
  failed: number;
  /** Objects the sweep removed (0 when it did not run or does not count). */
  swept: number;
}

export class Reconciler {
  private readonly loop: Periodic;
  private readonly describe: (err: unknown) => Record<string, unknown>;
  private running?: Promise<ReconcileReport>;
  private startedUp = false;
  private lastSweep?: number;

  constructor(
    private readonly parts: ReconcilerParts,
    private readonly settings: ReconcilerSettings,
  ) {
    this.describe = settings.describe ?? ((err) => ({ err: String(err) }));
    this.loop = new Periodic(() => this.runOnce(), settings.intervalMs, {
      log: settings.log,
      what: `${settings.service} reconcile pass`,
      describe: settings.describe,
    });
  }

  /** The start-up pass at once (see `soleInstance`), then a pass every interval. */
  start(): void {
    this.loop.start(() => this.runOnce());
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    await this.running?.catch(() => undefined);
  }

  /** Settles once the start-up pass has run, failed or not: a retried keyed request waits for it (kit's Background). */
  recovered(): Promise<void> {
    return this.loop.firstPass();
  }

  /** One pass now, joining one already running (operators' and tests' lever; the loop's pass too). */
  runOnce(): Promise<ReconcileReport> {
    this.running ??= this.pass().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async pass(): Promise<ReconcileReport> {
    const { settings, parts } = this;
    const now = settings.now().getTime();
    const startUp = !this.startedUp;
    this.startedUp = true;
    // At start-up a sole instance has nothing in flight: every pending item is a crash's.
    const before = new Date(startUp && settings.soleInstance !== false ? now : now - settings.graceMs);
    const report: ReconcileReport = { settled: {}, failed: 0, swept: 0 };
    const each = this.settleEach(report);
    for (const step of parts.steps) {
      const settled = await each(step.what, await step.pending(before), step.key, step.settle);
      if (settled) report.settled[step.what] = settled;
    }
    await parts.observe?.();
    if (parts.sweep && (this.lastSweep === undefined || now - this.lastSweep >= settings.sweepEveryMs)) {
      // Counted from the start of the attempt: a sweep that fails waits its turn like one that succeeds.
      this.lastSweep = now;
      report.swept = (await parts.sweep(each)) ?? 0;
    }
    if (report.swept || Object.keys(report.settled).length) settings.log.info(report, `reconciled ${settings.resources} left pending`);
    return report;
  }

  private settleEach(report: ReconcileReport): SettleEach {
    const { locks, log } = this.settings;
    return async (what, items, key, settle) => {
      let settled = 0;
      const failures: Record<string, unknown>[] = [];
      for (const item of items) {
        const id = key(item);
        if (locks?.busy(id)) continue;
        try {
          const result = await (locks ? locks.run(id, () => settle(item)) : settle(item));
          if (result !== false) settled++;
        } catch (err) {
          failures.push({ id, ...this.describe(err) });
        }
      }
      // One line per step, not per item: a cluster that is away fails them all for one cause.
      if (failures.length) log.warn({ failed: failures.length, first: failures[0] }, `reconcile: could not ${what}; will retry`);
      report.failed += failures.length;
      return settled;
    };
  }
}
