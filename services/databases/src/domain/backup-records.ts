// Backups as the databases service keeps them: a record per backup (resynced from the
// backup repository on every read) and a schedule per database.
export const BACKUP_STATUSES = ['running', 'completed', 'failed'] as const;
export type BackupStatus = (typeof BACKUP_STATUSES)[number];

/** `triggered`: started by a restore or a fork that found no completed backup. */
export const BACKUP_METHODS = ['manual', 'scheduled', 'triggered'] as const;
export type BackupMethod = (typeof BACKUP_METHODS)[number];

export interface BackupRecord {
  id: string;
  databaseId: string;
  /** Unique per database; the path's `{backupName}`. */
  name: string;
  status: BackupStatus;
  method: BackupMethod;
  /** Bytes the backup takes in the repository (compressed); null until it completed. */
  sizeBytes: number | null;
  startedAt: Date;
  completedAt: Date | null;
  error: string | null;
  /** The repository's own id of the backup (pgBackRest's label), once it completed. */
  ref: string | null;
  /** False while the request that starts it has not committed (never shown). */
  started: boolean;
  /** Set while a DELETE removes it from the repository (no longer shown). */
  deletingSince: Date | null;
}

export interface BackupSchedule {
  databaseId: string;
  /** Five-field cron, UTC. */
  schedule: string;
  /** Completed scheduled backups kept; older ones are pruned. */
  retentionCount: number;
  enabled: boolean;
  /** Null while disabled. */
  nextRunAt: Date | null;
}

export const RETENTION_COUNT = { min: 1, max: 100, default: 7 } as const;

/**
 * Every database is backed up daily from the start, at a minute between 00:00 and 05:59
 * UTC drawn from its id: spread over the quiet hours, so a machine's databases do not all
 * back up at once, and the same for a database every time it is asked.
 */
export function defaultSchedule(databaseId: string): string {
  const hex = databaseId.replace(/-/g, '');
  const minute = parseInt(hex.slice(0, 4), 16) % 60;
  const hour = parseInt(hex.slice(4, 8), 16) % 6;
  return `${minute} ${hour} * * *`;
}

/** A backup's name: its start time in UTC, `YYYYMMDD-HHMMSS` (the shape MOCO gives its backups). */
export function backupNameAt(at: Date): string {
  return at
    .toISOString()
    .replace(/\.\d+Z$/, '')
    .replace(/[-:]/g, '')
    .replace('T', '-');
}

/** The span a postgresql restore's `target_time` may take. */
export interface RecoveryWindow {
  earliest: Date;
  latest: Date;
}
