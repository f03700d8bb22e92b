// The events the databases service publishes, written through the outbox in the
// transaction of the change they describe. Subjects:
// pier.events.<workspace>.<vpc>.<kind>.<database id>. Never a password.
import type { PierEvent } from '@pier/kit';
import type { AllowlistRule, DatabaseRecord, DatabaseStatus } from './database.ts';
import type { BackupRecord, BackupSchedule } from './backup-records.ts';

function event(db: DatabaseRecord, kind: string, data: Record<string, unknown>): PierEvent {
  return { kind, workspaceId: db.workspaceId, vpcId: db.vpcId, resourceId: db.id, data };
}

function lifecycle(kind: string, db: DatabaseRecord): PierEvent {
  const source = db.restoreSource;
  return event(db, kind, {
    name: db.name,
    engine: db.engine,
    status: db.status,
    instance_type: db.instanceType,
    storage_gb: db.storageGb,
    replicas: db.replicas,
    external_access_enabled: db.externalAccessEnabled,
    ...(source && kind === 'database.created'
      ? { source: { kind: source.kind, database_id: source.databaseId, backup_name: source.backupName, target_time: source.targetTime } }
      : {}),
  });
}

function backupEvent(kind: string, db: DatabaseRecord, b: BackupRecord): PierEvent {
  return event(db, kind, { backup_name: b.name, method: b.method, status: b.status, size_bytes: b.sizeBytes, error: b.error });
}

export const events = {
  created: (db: DatabaseRecord) => lifecycle('database.created', db),
  updated: (db: DatabaseRecord) => lifecycle('database.updated', db),
  // The platform's own, even when a read noticed it.
  statusChanged: (db: DatabaseRecord, previous: DatabaseStatus) => ({
    ...event(db, 'database.status_changed', { name: db.name, status: db.status, previous_status: previous, reason: db.statusReason }),
    byPlatform: true,
  }),
  ruleAdded: (db: DatabaseRecord, rule: AllowlistRule) => event(db, 'database.allowlist_rule_added', { rule_id: rule.id, cidr: rule.cidr }),
  ruleRemoved: (db: DatabaseRecord, rule: AllowlistRule) => event(db, 'database.allowlist_rule_removed', { rule_id: rule.id, cidr: rule.cidr }),
  backupStarted: (db: DatabaseRecord, b: BackupRecord) => backupEvent('database.backup_started', db, b),
  /** `database.backup_completed` or `database.backup_failed`, as the repository reports it. */
  backupFinished: (db: DatabaseRecord, b: BackupRecord) => backupEvent(`database.backup_${b.status}`, db, b),
  backupDeleted: (db: DatabaseRecord, b: BackupRecord) => backupEvent('database.backup_deleted', db, b),
  scheduleUpdated: (db: DatabaseRecord, s: BackupSchedule) =>
    event(db, 'database.backup_schedule_updated', { schedule: s.schedule, retention_count: s.retentionCount, enabled: s.enabled }),
  /** Gone from the cluster and soft-deleted; carries the actor when the delete request's own teardown finished it. */
  deleted: (db: DatabaseRecord) => event(db, 'database.deleted', { name: db.name, engine: db.engine }),
  /**
   * The SQL console ran a statement (or tried: `sqlstate` is the engine's refusal). Who ran
   * SQL against a database belongs in the audit log, like a shell; the statement does not,
   * and neither does the engine's message, which may quote it: it may hold values (a
   * command's arguments never enter an event).
   */
  queryRun: (db: DatabaseRecord, outcome: { command: string | null; row_count: number | null; sqlstate: string | null }) =>
    event(db, 'database.query_run', { name: db.name, ...outcome }),
  slowQueriesReset: (db: DatabaseRecord) => event(db, 'database.slow_queries_reset', { name: db.name }),
  backupsPurged: (db: DatabaseRecord) => event(db, 'database.backups_purged', { name: db.name }),
};
