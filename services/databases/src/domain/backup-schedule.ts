// PATCH backups/schedule: when a database is backed up by itself and how many of those
// backups are kept. Pier's own scheduler (backup-worker.ts) runs the schedules on
// every cluster adapter, so a schedule means the same wherever the database runs. A
// change is a write of our own records only: no cluster call.
import { cronScheduleProblem, InputError, nextFireTime } from '@pier/kit';
import { defaultSchedule, RETENTION_COUNT, type BackupSchedule } from './backup-records.ts';
import { events } from './events.ts';
import { findMutable, type DatabasesContext, type Scope } from './context.ts';

export interface ScheduleInput {
  schedule?: string;
  retention_count?: number;
  enabled?: boolean;
}

function invalid(field: string, message: string): InputError {
  return new InputError(`${field}: ${message}`, 'invalid_request', { field });
}

/** The schedule after `input`, checked field by field. */
export function resolveSchedule(current: BackupSchedule, input: ScheduleInput, now: Date): BackupSchedule {
  const schedule = input.schedule === undefined ? current.schedule : input.schedule.trim();
  const problem = cronScheduleProblem(schedule);
  if (problem) throw invalid('schedule', `not a 5-field cron schedule (minute hour day-of-month month day-of-week, UTC): ${problem}`);
  const retentionCount = input.retention_count ?? current.retentionCount;
  if (!Number.isInteger(retentionCount) || retentionCount < RETENTION_COUNT.min || retentionCount > RETENTION_COUNT.max) {
    throw invalid('retention_count', `must be an integer from ${RETENTION_COUNT.min} to ${RETENTION_COUNT.max}`);
  }
  const enabled = input.enabled ?? current.enabled;
  return { databaseId: current.databaseId, schedule, retentionCount, enabled, nextRunAt: enabled ? nextFireTime(schedule, now) : null };
}

/** The database's schedule: the one it got when provisioned, or the default if that row is missing. */
export async function scheduleOf(ctx: DatabasesContext, databaseId: string): Promise<BackupSchedule> {
  const stored = await ctx.store.schedule(databaseId);
  if (stored) return stored;
  const schedule = defaultSchedule(databaseId);
  return { databaseId, schedule, retentionCount: RETENTION_COUNT.default, enabled: true, nextRunAt: nextFireTime(schedule, ctx.now()) };
}

export async function updateSchedule(ctx: DatabasesContext, scope: Scope, id: string, input: ScheduleInput): Promise<BackupSchedule> {
  const db = await findMutable(ctx, scope, id);
  const current = await scheduleOf(ctx, db.id);
  const next = resolveSchedule(current, input, ctx.now());
  if (next.schedule === current.schedule && next.retentionCount === current.retentionCount && next.enabled === current.enabled) return current;
  const saved = await ctx.store.transaction(async (tx) => {
    const s = await tx.putSchedule(next);
    await tx.event(events.scheduleUpdated(db, s));
    return s;
  });
  ctx.eventsWritten();
  return saved;
}
