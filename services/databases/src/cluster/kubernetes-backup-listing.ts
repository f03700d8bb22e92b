import { BACKUP_METHODS, type BackupMethod } from '../domain/backup-records.ts';
import type { RepositoryBackup, RepositoryListing } from '../domain/cluster-port.ts';
import { LABELS } from './kubernetes-meta.ts';

// A database's backups as the kubernetes adapter lists them: its CloudNativePG Backups or
// MOCO backup Jobs (one list call), read with the Cluster / MySQLCluster they belong to.
// They are kept when the database is deleted (until its backups are purged), so a deleted
// database lists from them as well; one still running then can never finish.

interface Condition {
  type: string;
  status: string;
  message?: string;
  reason?: string;
  lastTransitionTime?: string;
}

/** What is read of a Backup or a Job. */
export interface BackupObject {
  metadata?: { labels?: Record<string, string>; creationTimestamp?: string };
  status?: {
    // CloudNativePG Backup
    phase?: string;
    startedAt?: string;
    stoppedAt?: string;
    reconciliationTerminatedAt?: string;
    backupId?: string;
    error?: string;
    // Job
    startTime?: string;
    completionTime?: string;
    conditions?: Condition[];
  };
}

/** What is read of the Cluster / MySQLCluster. */
export interface BackedUpCluster {
  status?: {
    conditions?: Condition[];
    /** MOCO: the last backup taken (its time is the name of its folder in the bucket). */
    backup?: { time?: string; dumpSize?: number; binlogSize?: number };
  };
}

const INTERRUPTED = 'interrupted: the database was deleted during the backup';

const date = (text: string | undefined) => (text ? new Date(text) : null);

function methodOf(o: BackupObject): BackupMethod | null {
  const m = o.metadata?.labels?.[LABELS.backupMethod];
  return BACKUP_METHODS.includes(m as BackupMethod) ? (m as BackupMethod) : null;
}

const named = (o: BackupObject) => o.metadata?.labels?.[LABELS.backupName];

/** A backup that was running when its database went: it never finishes (dated by its start, so every read agrees). */
function settled(b: RepositoryBackup, clusterGone: boolean): RepositoryBackup {
  return clusterGone && b.status === 'running' ? { ...b, status: 'failed', completedAt: b.startedAt, error: INTERRUPTED } : b;
}

/**
 * CloudNativePG: phase completed / failed (walArchivingFailing too) / anything else
 * running; `backupId` is the ref restores name. CloudNativePG reports no size. Archiving
 * is what the Cluster's ContinuousArchiving condition says.
 */
export function cnpgListing(backups: BackupObject[], cluster: BackedUpCluster | undefined, now: Date): RepositoryListing {
  const out: RepositoryBackup[] = [];
  for (const o of backups) {
    const name = named(o);
    if (!name) continue;
    const phase = o.status?.phase ?? '';
    const status = phase === 'completed' ? 'completed' : phase === 'failed' || phase === 'walArchivingFailing' ? 'failed' : 'running';
    const startedAt = date(o.status?.startedAt) ?? date(o.metadata?.creationTimestamp) ?? now;
    const b: RepositoryBackup = {
      name,
      method: methodOf(o),
      status,
      ref: o.status?.backupId || null,
      sizeBytes: null,
      startedAt,
      completedAt: status === 'running' ? null : (date(o.status?.stoppedAt) ?? date(o.status?.reconciliationTerminatedAt) ?? startedAt),
      error: status === 'failed' ? o.status?.error || phase : null,
    };
    out.push(settled(b, !cluster));
  }
  const archiving = cluster?.status?.conditions?.find((c) => c.type === 'ContinuousArchiving')?.status === 'True';
  return { readable: true, backups: out, archiving, archivedUntil: null };
}

/**
 * MOCO: a Job Complete or Failed is finished, else running. The ref is the time it
 * finished: a restore's `restorePoint` (MOCO takes the newest dump at or before it) and
 * the end of the span in which its folder in the bucket was made (for deletes). The size
 * is known for the last backup only, from the MySQLCluster's status.
 */
export function mocoListing(jobs: BackupObject[], cluster: BackedUpCluster | undefined, now: Date): RepositoryListing {
  const last = cluster?.status?.backup;
  const lastAt = date(last?.time);
  const out: RepositoryBackup[] = [];
  for (const o of jobs) {
    const name = named(o);
    if (!name) continue;
    const cond = (type: string) => o.status?.conditions?.find((c) => c.type === type && c.status === 'True');
    const done = cond('Complete');
    const failed = cond('Failed');
    const startedAt = date(o.status?.startTime) ?? date(o.metadata?.creationTimestamp) ?? now;
    const completedAt = done
      ? (date(o.status?.completionTime) ?? date(done.lastTransitionTime) ?? startedAt)
      : failed
        ? (date(failed.lastTransitionTime) ?? startedAt)
        : null;
    const status = done ? 'completed' : failed ? 'failed' : 'running';
    const holdsLast = status === 'completed' && lastAt && completedAt && lastAt >= new Date(startedAt.getTime() - 1000) && lastAt <= completedAt;
    const b: RepositoryBackup = {
      name,
      method: methodOf(o),
      status,
      ref: completedAt ? completedAt.toISOString() : null,
      sizeBytes: holdsLast ? (last?.dumpSize ?? 0) + (last?.binlogSize ?? 0) : null,
      startedAt,
      completedAt,
      error: failed ? `${failed.reason ?? 'the backup Job failed'}${failed.message ? `: ${failed.message}` : ''}` : null,
    };
    out.push(settled(b, !cluster));
  }
  return { readable: true, backups: out, archiving: false, archivedUntil: null };
}
