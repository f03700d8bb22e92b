import type { Logger } from './logger.ts';
import { runAsPlatform } from './request-context.ts';

/** How a loop reports its failures: to this logger, as "<what> failed". */
export interface PeriodicReport {
  log: Logger;
  /** What a pass is, for the log lines ("reconcile pass", "cron scheduler pass"). */
  what: string;
  /** The fields that describe a failure (default `{ err: String(err) }`); equal fields count as the same failure. */
  describe?: (err: unknown) => Record<string, unknown>;
}

/**
 * Runs a pass every `intervalMs`, counted from the end of the previous pass, so two passes
 * never overlap and a slow pass delays the next rather than piling up. A failed pass is
 * reported and the next one still comes: background work retries by itself.
 *
 * A cause that lasts (the Docker engine is gone, say) is one warning, not one per pass: the
 * same failure again is logged at debug, a different one warns again, and the first pass
 * that succeeds afterwards says the loop recovered.
 */
export class Periodic {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = true;
  private lastFailure?: string;
  private failures = 0;
  private first?: Promise<void>;

  constructor(
    private readonly pass: () => Promise<unknown>,
    private readonly intervalMs: number,
    private readonly report: PeriodicReport,
  ) {}

  /** Starts the passes; `first`, when given, runs at once before the first interval. */
  start(first?: () => Promise<unknown>): void {
    this.stopped = false;
    if (!first) return this.schedule();
    this.running = this.first = this.guard(first);
  }

  /** Settles when the `first` pass given to start has ended, failed or not (at once without one). */
  firstPass(): Promise<void> {
    return this.first ?? Promise.resolve();
  }

  /** Stops scheduling and waits for a pass in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private guard(fn: () => Promise<unknown>): Promise<void> {
    return fn()
      .then(
        () => this.succeeded(),
        (err: unknown) => this.failed(err),
      )
      .finally(() => {
        this.running = undefined;
        this.schedule();
      });
  }

  private succeeded(): void {
    if (this.failures === 0) return;
    this.report.log.info({ failedPasses: this.failures }, `${this.report.what} recovered`);
    this.failures = 0;
    this.lastFailure = undefined;
  }

  private failed(err: unknown): void {
    const fields = this.report.describe ? this.report.describe(err) : { err: String(err) };
    const key = JSON.stringify(fields);
    this.failures++;
    if (key === this.lastFailure) {
      this.report.log.debug({ ...fields, failedPasses: this.failures }, `${this.report.what} still failing`);
      return;
    }
    this.lastFailure = key;
    this.report.log.warn({ ...fields, retryEveryMs: this.intervalMs }, `${this.report.what} failed; will retry (said once until the cause changes)`);
  }

  private schedule(): void {
    if (this.stopped) return;
    // Outside any request's context: a pass's events are the platform's own, even when the
    // loop was started or woken while a request ran.
    this.timer = setTimeout(() => {
      this.running = runAsPlatform(() => this.guard(this.pass));
    }, this.intervalMs);
    this.timer.unref?.();
  }
}
