// The databases schema's rows (snake_case, as stored) and the records they become.
import type { AllowlistRule, DatabaseRecord, DatabaseStatus, PendingChange, RestoreSource, RuleState } from '../domain/database.ts';
import type { BackupMethod, BackupRecord, BackupSchedule, BackupStatus } from '../domain/backup-records.ts';

export interface DatabaseRow {
  id: string;
  short_id: string;
  workspace_id: string;
  vpc_id: string;
  name: string;
  engine: DatabaseRecord['engine'];
  instance_type: DatabaseRecord['instanceType'];
  storage_gb: number;
  version: string;
  replicas: number;
  external_access_enabled: boolean;
  status: DatabaseStatus;
  status_reason: string | null;
  provisioned: boolean;
  pending_change: PendingChange | null;
  pending_since: Date | null;
  restore_source: RestoreSource | null;
  archived_until: Date | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export interface RuleRow {
  id: string;
  database_id: string;
  cidr: string;
  description: string;
  state: RuleState;
  created_at: Date;
  updated_at: Date;
}

export const fromRow = (r: DatabaseRow): DatabaseRecord => ({
  id: r.id,
  shortId: r.short_id,
  workspaceId: r.workspace_id,
  vpcId: r.vpc_id,
  name: r.name,
  engine: r.engine,
  instanceType: r.instance_type,
  storageGb: r.storage_gb,
  version: r.version,
  replicas: r.replicas,
  externalAccessEnabled: r.external_access_enabled,
  status: r.status,
  statusReason: r.status_reason,
  provisioned: r.provisioned,
  pendingChange: r.pending_change,
  pendingSince: r.pending_since,
  restoreSource: r.restore_source,
  archivedUntil: r.archived_until,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  deletedAt: r.deleted_at,
});

export const ruleFromRow = (r: RuleRow): AllowlistRule => ({
  id: r.id,
  databaseId: r.database_id,
  cidr: r.cidr,
  description: r.description,
  state: r.state,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export interface BackupRow {
  id: string;
  database_id: string;
  name: string;
  method: BackupMethod;
  status: BackupStatus;
  /** bigint: pg hands it over as a string. */
  size_bytes: string | number | null;
  started_at: Date;
  completed_at: Date | null;
  error: string | null;
  ref: string | null;
  started: boolean;
  deleting_since: Date | null;
  created_at: Date;
}

export const backupFromRow = (r: BackupRow): BackupRecord => ({
  id: r.id,
  databaseId: r.database_id,
  name: r.name,
  status: r.status,
  method: r.method,
  sizeBytes: r.size_bytes === null ? null : Number(r.size_bytes),
  startedAt: r.started_at,
  completedAt: r.completed_at,
  error: r.error,
  ref: r.ref,
  started: r.started,
  deletingSince: r.deleting_since,
});

export interface ScheduleRow {
  database_id: string;
  schedule: string;
  retention_count: number;
  enabled: boolean;
  next_run_at: Date | null;
}

export const scheduleFromRow = (r: ScheduleRow): BackupSchedule => ({
  databaseId: r.database_id,
  schedule: r.schedule,
  retentionCount: r.retention_count,
  enabled: r.enabled,
  nextRunAt: r.next_run_at,
});
