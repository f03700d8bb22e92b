// The databases schema's rows (snake_case, as stored) and the records they become.
import type { AllowlistRule, DatabaseRecord, DatabaseStatus, PendingChange, RuleState } from '../domain/database.ts';

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
  created_at: Date;
  updated_at: Date;
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
  createdAt: r.created_at,
  updatedAt: r.updated_at,
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
