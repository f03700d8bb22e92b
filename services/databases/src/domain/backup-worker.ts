// The time-driven half of backups, one loop for every cluster adapter (so a schedule and
// its retention mean the same on docker and kubernetes):
//
//   due schedules        a `scheduled` backup started, next run set (a run missed while
//                        the database was not running, or busy backing up, is skipped)
//   running backups      resynced from the repository, so `completed`/`failed` and their
//                        events come without a reader
//   retention            completed scheduled backups beyond the schedule's count deleted,
//                        oldest first (manual and triggered backups are the user's)
//   deleted databases    their backups and archive purged once past the retention
//
// Every step is idempotent and works under the database's lock; a step the cluster
// cannot do now is tried again at the next pass.
import { ConflictError, Periodic, nextFireTime } from '@pier/kit';
import type { DatabaseRecord } from './database.ts';
import type { BackupRecord, BackupSchedule } from './backup-records.ts';
import { refuseNeeded, removeBackup, resyncBackups, startBackup } from './backups.ts';
import { scheduleOf } from './backup-schedule.ts';
import { events } from './events.ts';
import { refOf, type DatabasesContext } from './context.ts';

export class BackupWorker {
  private readonly loop: Periodic;

  constructor(
    private readonly ctx: DatabasesContext,
    intervalMs: number,
  ) {
    this.loop = new Periodic(() => this.runDue(this.ctx.now()), intervalMs, { log: ctx.log, what: 'backup scheduler pass' });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One pass at `now` (tests call it with a clock of their own). */
  async runDue(now: Date): Promise<void> {
    for (const s of await this.ctx.store.dueSchedules(now)) await this.locked(s.databaseId, () => this.runSchedule(s, now));
    for (const id of await this.ctx.store.databasesWithRunningBackups()) await this.locked(id, () => this.settle(id));
    for (const id of await this.ctx.store.databasesOverRetention()) await this.locked(id, () => this.prune(id));
    for (const db of await this.ctx.store.purgeDue(new Date(now.getTime() - this.ctx.deadlines.deletedBackupsMs))) {
      await this.locked(db.id, () => this.purge(db));
    }
  }

  /** Runs `work` under the database's lock unless a request holds it (then the next pass does). */
  private async locked(id: string, work: () => Promise<void>): Promise<void> {
    if (this.ctx.locks.busy(id)) return;
    try {
      await this.ctx.locks.run(id, work);
    } catch (err) {
      this.ctx.log.warn({ err: String(err), id }, 'backup scheduler: a step failed; will retry');
    }
  }

  private async runSchedule(s: BackupSchedule, now: Date): Promise<void> {
    const db = await this.ctx.store.byId(s.databaseId);
    if (db?.provisioned && db.status === 'running') {
      try {
        await startBackup(this.ctx, db, 'scheduled');
      } catch (err) {
        // Another backup still running skips this run; anything else (the cluster out of
        // reach) leaves it due, to be tried again at the next pass.
        if (!(err instanceof ConflictError)) throw err;
        this.ctx.log.info({ id: db.id, reason: err.message }, 'scheduled backup skipped');
      }
    } else {
      this.ctx.log.info({ id: s.databaseId, status: db?.status }, 'scheduled backup skipped: the database is not running');
    }
    await this.ctx.store.setNextRun(s.databaseId, nextFireTime(s.schedule, now));
  }

  private async settle(id: string): Promise<void> {
    const db = await this.ctx.store.byId(id);
    if (db?.provisioned) await resyncBackups(this.ctx, db);
  }

  private async prune(id: string): Promise<void> {
    const db = await this.ctx.store.byId(id);
    if (!db?.provisioned || db.status === 'deleting') return;
    const { backups } = await resyncBackups(this.ctx, db);
    const schedule = await scheduleOf(this.ctx, db.id);
    const beyond = backups.filter((b) => b.method === 'scheduled' && b.status === 'completed').slice(schedule.retentionCount);
    // Oldest first: if one cannot go, the newer ones stay too.
    for (const b of beyond.reverse()) await this.pruneOne(db, b, backups);
  }

  private async pruneOne(db: DatabaseRecord, b: BackupRecord, backups: BackupRecord[]): Promise<void> {
    await refuseNeeded(this.ctx, db, b, backups);
    await removeBackup(this.ctx, db, b);
    this.ctx.log.info({ id: db.id, backup: b.name }, 'pruned a scheduled backup beyond the retention count');
  }

  /** A deleted database past its retention: everything in its repository goes. */
  private async purge(db: DatabaseRecord): Promise<void> {
    await this.ctx.cluster.purgeBackups(refOf(db));
    await this.ctx.store.transaction(async (tx) => {
      await tx.markPurged(db.id);
      await tx.event(events.backupsPurged(db));
    });
    this.ctx.eventsWritten();
    this.ctx.log.info({ id: db.id, name: db.name }, 'purged the backups of a deleted database past its retention');
  }
}
