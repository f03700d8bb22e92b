// The time-driven half of disk backups, one loop for both clusters:
//
//   recovery          backups no process runs any more (a previous process's, or those of an
//                     instance that stopped or died: their claims are free) are followed
//                     again or failed, restores likewise resumed from their step (and any
//                     restore an unreachable cluster held up is tried again)
//   due schedules     a `scheduled` backup taken (its next run set first, so a crash does not
//                     repeat it); a run due while the service is busy or not deployed is skipped
//   retention         completed scheduled backups beyond the schedule's count deleted, oldest
//                     first (manual backups are the user's)
//   deleted services  their backups removed from the store, their schedules dropped
//
// Scheduled backups run one after the other, each to its end, within a pass. One instance of
// compute runs this loop (leaderOnly in server.ts); backups and restores asked for by a
// request run in the instance that took the request, each under its claim (DiskJobs).
import { ConflictError, Periodic, nextFireTime, type Logger } from '@pier/kit';
import type { ComputeContext } from '../context.ts';
import type { DiskBackupSchedule } from './disk-backup-store-port.ts';
import { recoverBackups, removeBackup, runBackup, startBackup } from './disk-backups.ts';
import { resumeRestores } from './disk-restore.ts';

/** Deleted services' backups removed per pass. */
const PURGE_BATCH = 100;

export class DiskBackupWorker {
  private readonly loop: Periodic;
  private readonly startedAt = new Date();

  constructor(
    private readonly ctx: ComputeContext,
    private readonly log: Logger,
    intervalMs: number,
  ) {
    this.loop = new Periodic(() => this.runDue(this.ctx.now()), intervalMs, { log, what: 'disk backup scheduler pass' });
  }

  start(): void {
    this.loop.start(() => this.recover());
  }

  /**
   * Stops the loop. The backups and restores running here go on (a request may have started
   * them, and they hold their claims): they stop with the process (DiskJobs.stop), and
   * recovery, wherever it runs next, finishes them.
   */
  async stop(): Promise<void> {
    await this.loop.stop();
  }

  async recover(): Promise<void> {
    await recoverBackups(this.ctx, this.startedAt);
    await resumeRestores(this.ctx, this.log);
  }

  /** One pass at `now` (tests drive it with a clock of their own). */
  async runDue(now: Date): Promise<void> {
    await this.recover();
    const { store } = this.ctx.disks;
    for (const s of await store.dueSchedules(now)) await this.guard(s.service_id, () => this.runSchedule(s, now));
    for (const b of await store.backupsBeyondRetention()) {
      await this.guard(b.service_id, async () => {
        await removeBackup(this.ctx, b, 'retention');
        this.log.info({ service: b.service_id, backup: b.id }, 'pruned a scheduled disk backup beyond the retention count');
      });
    }
    for (const b of await store.backupsOfDeletedServices(PURGE_BATCH)) await this.guard(b.service_id, () => removeBackup(this.ctx, b, 'service_deleted'));
    await store.dropSchedulesOfDeletedServices();
  }

  /** One item's failure is logged and left for the next pass; the others go on. */
  private async guard(serviceId: string, work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (err) {
      this.log.warn({ err: String(err), service: serviceId }, 'disk backup scheduler: a step failed; will retry');
    }
  }

  private async runSchedule(s: DiskBackupSchedule, now: Date): Promise<void> {
    await this.ctx.disks.store.setNextRun(s.service_id, nextFireTime(s.schedule, now));
    const service = await this.ctx.store.serviceById(s.service_id);
    if (!service || service.deleted_at || service.status === 'deleting' || service.status === 'restoring' || service.disk_size_gb === null) return;
    let backupId: string;
    try {
      backupId = (await this.ctx.locks.run(service.id, async () => startBackup(this.ctx, (await this.ctx.store.serviceById(service.id))!, 'scheduled'))).id;
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      this.log.info({ service: service.id, reason: err.message }, 'scheduled disk backup skipped');
      return;
    }
    await this.ctx.disks.jobs.run(backupId, (signal) => runBackup(this.ctx, backupId, signal));
  }
}
