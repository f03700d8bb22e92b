// Everything disk backups work with, as one field of the context: the records, the cluster's
// side, and the work this process runs (backups and restores go on after their request).
import type { Logger } from '@pier/kit';
import type { DiskBackupStore } from './disk-backup-store-port.ts';
import type { DiskBackupPort } from './disk-backup-port.ts';

export interface DiskBackupDeps {
  store: DiskBackupStore;
  port: DiskBackupPort;
  jobs: DiskJobs;
}

/**
 * Claims a job across every instance of compute (kit's ResourceLocks.tryRun): whoever holds
 * a job's claim runs it; the others leave it alone.
 */
export interface JobClaims {
  tryRun<T>(key: string, fn: () => Promise<T>): Promise<{ ran: true; value: T } | { ran: false }>;
}

/**
 * The backups and restores running in this process, by record id. Each runs under a claim
 * (`disk-job:<id>`, a lease renewed while it runs), so recovery in another instance leaves
 * it alone and a job is never run by two instances at once; shutdown stops them (a stopped
 * one is what a crash leaves, and recovery finishes or undoes it once its claim is free).
 */
export class DiskJobs {
  private readonly running = new Map<string, Promise<void>>();
  private readonly stopping = new AbortController();

  constructor(
    private readonly log: Logger,
    private readonly claims?: JobClaims,
  ) {}

  get signal(): AbortSignal {
    return this.stopping.signal;
  }

  has(id: string): boolean {
    return this.running.has(id);
  }

  /**
   * Runs `work` unless it already runs, here or in another instance; resolves when it ended
   * or was left to whoever runs it (a failure is logged: the work records its own outcome).
   */
  run(id: string, work: (signal: AbortSignal) => Promise<void>): Promise<void> {
    const current = this.running.get(id);
    if (current) return current;
    if (this.stopping.signal.aborted) return Promise.resolve();
    const signal = this.stopping.signal;
    const claimed = this.claims ? this.claims.tryRun(`disk-job:${id}`, () => work(signal)) : work(signal);
    const done = claimed
      .then(() => undefined)
      .catch((err: unknown) => this.log.warn({ err: String(err), id }, 'disk backup work failed; the scheduler retries what is left'))
      .finally(() => this.running.delete(id));
    this.running.set(id, done);
    return done;
  }

  /** At the process's stop (not when another instance takes the scheduler over): what runs here stops. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await Promise.allSettled([...this.running.values()]);
  }
}
