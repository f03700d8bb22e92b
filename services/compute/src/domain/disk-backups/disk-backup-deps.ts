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
 * The backups and restores running in this process, by record id: recovery leaves them
 * alone, and shutdown stops them (a stopped one is what a crash leaves, and recovery at the
 * next start finishes or undoes it).
 */
export class DiskJobs {
  private readonly running = new Map<string, Promise<void>>();
  private readonly stopping = new AbortController();

  constructor(private readonly log: Logger) {}

  get signal(): AbortSignal {
    return this.stopping.signal;
  }

  has(id: string): boolean {
    return this.running.has(id);
  }

  /** Runs `work` unless it already runs here; resolves when it ended (a failure is logged: the work records its own outcome). */
  run(id: string, work: (signal: AbortSignal) => Promise<void>): Promise<void> {
    const current = this.running.get(id);
    if (current) return current;
    if (this.stopping.signal.aborted) return Promise.resolve();
    const done = work(this.stopping.signal)
      .catch((err: unknown) => this.log.warn({ err: String(err), id }, 'disk backup work failed; the scheduler retries what is left'))
      .finally(() => this.running.delete(id));
    this.running.set(id, done);
    return done;
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await Promise.allSettled([...this.running.values()]);
  }
}
