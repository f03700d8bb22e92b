import type { DatabaseRecord, DatabaseStatus } from './database.ts';

/** What the cluster says about one database (the port's `observe`). */
export type Phase = 'ready' | 'starting' | 'failed' | 'absent';

export interface Observation {
  phase: Phase;
  /** Why it is failed or starting, in the cluster's words. */
  reason?: string;
}

export interface StatusChange {
  status: DatabaseStatus;
  reason: string | null;
}

/**
 * The stored status resynced to what the cluster shows. `null` when nothing changes.
 * `starting` is transient (a restart, a recreated container): it only turns into
 * `error` when a database still being created has run out of time to get healthy.
 */
export function resync(db: DatabaseRecord, seen: Observation, now: Date, provisionDeadlineMs: number): StatusChange | null {
  const to = (status: DatabaseStatus, reason: string | null = null): StatusChange | null =>
    status === db.status && reason === db.statusReason ? null : { status, reason };

  switch (db.status) {
    case 'deleted':
      return null;
    case 'deleting':
      return seen.phase === 'absent' ? to('deleted') : null;
    default:
      break;
  }
  switch (seen.phase) {
    case 'ready':
      return to('running');
    case 'failed':
      return to('error', seen.reason ?? 'the database failed');
    case 'absent':
      return to('error', 'the database no longer exists in the cluster');
    case 'starting':
      if (db.status === 'creating' && now.getTime() - db.createdAt.getTime() > provisionDeadlineMs) {
        return to('error', `not healthy within ${Math.round(provisionDeadlineMs / 1000)} s${seen.reason ? `: ${seen.reason}` : ''}`);
      }
      return null;
  }
}
