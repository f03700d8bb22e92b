// PUT/DELETE backups/schedule: when a service's disk is backed up by itself (five-field cron
// or a macro, UTC, as cron services take them) and how many of those backups are kept. A
// change is a write of our own records only; the worker (disk-backup-worker.ts) runs it.
import { InputError, NotFoundError, cronScheduleProblem, nextFireTime } from '@pier/kit';
import type { ComputeContext } from '../context.ts';
import { events } from '../events.ts';
import type { Scope } from '../records.ts';
import type { DiskBackupSchedule } from './disk-backup-store-port.ts';
import { liveService, serviceWithDisk } from './disk-backups.ts';

export const RETENTION_COUNT = { min: 1, max: 100, default: 7 } as const;

export interface ScheduleInput {
  schedule: string;
  retention_count?: number;
}

/** The schedule a PUT asks for, checked (a 400 naming the field), with its next run after `now`. */
export function checkSchedule(input: ScheduleInput, now: Date): { schedule: string; retention_count: number; next_run_at: Date } {
  const schedule = input.schedule.trim();
  const problem = cronScheduleProblem(schedule);
  if (problem) {
    throw new InputError(
      `schedule: not a cron schedule (minute hour day-of-month month day-of-week, UTC, or a macro such as @daily): ${problem}`,
      'invalid_request',
      {
        field: 'schedule',
      },
    );
  }
  return { schedule, retention_count: input.retention_count ?? RETENTION_COUNT.default, next_run_at: nextFireTime(schedule, now) };
}

export async function putSchedule(ctx: ComputeContext, scope: Scope, id: string, input: ScheduleInput): Promise<DiskBackupSchedule> {
  const s = await serviceWithDisk(ctx, scope, id);
  const next = checkSchedule(input, ctx.now());
  const saved = await ctx.disks.store.transaction(async (tx) => {
    const row = await tx.putSchedule({ service_id: s.id, ...next });
    await tx.writeEvent(events.diskBackupSchedule(s, row));
    return row;
  });
  ctx.eventsWritten();
  return saved;
}

/** No more scheduled backups; those taken stay (retention no longer prunes them). 404 when there is no schedule. */
export async function deleteSchedule(ctx: ComputeContext, scope: Scope, id: string): Promise<void> {
  const s = await liveService(ctx, scope, id);
  const removed = await ctx.disks.store.transaction(async (tx) => {
    if (!(await tx.deleteSchedule(s.id))) return false;
    await tx.writeEvent(events.diskBackupSchedule(s, null));
    return true;
  });
  if (!removed) throw new NotFoundError('the service has no backup schedule', 'schedule_not_found');
  ctx.eventsWritten();
}
