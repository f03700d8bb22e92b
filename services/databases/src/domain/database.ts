import type { InstanceType } from '@pier/kit';

export const ENGINES = ['postgresql', 'mysql'] as const;
export type Engine = (typeof ENGINES)[number];

export const STATUSES = ['creating', 'running', 'error', 'deleting', 'deleted'] as const;
export type DatabaseStatus = (typeof STATUSES)[number];

/** A database as the store keeps it. */
export interface DatabaseRecord {
  id: string;
  shortId: string;
  workspaceId: string;
  vpcId: string;
  name: string;
  engine: Engine;
  instanceType: InstanceType;
  storageGb: number;
  /** PostgreSQL major version, or the MySQL-compatible server version, by engine. */
  version: string;
  replicas: number;
  externalAccessEnabled: boolean;
  status: DatabaseStatus;
  /** Why the database is in `error`, as the cluster reported it. */
  statusReason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface AllowlistRule {
  id: string;
  databaseId: string;
  cidr: string;
  description: string;
  createdAt: Date;
}

/** `<short_id>`: the first 8 characters of the UUID; also the database name in the engine. */
export function shortIdOf(id: string): string {
  return id.slice(0, 8);
}

/** The user customers connect as: owner of the `<short_id>` database. */
export function appUserOf(shortId: string): string {
  return `app_${shortId}`;
}

/** The role the control plane itself uses for the console, schema and slow queries. */
export const CONSOLE_USER = 'pier_console';

export function toJson(db: DatabaseRecord): Record<string, unknown> {
  return {
    id: db.id,
    short_id: db.shortId,
    workspace_id: db.workspaceId,
    vpc_id: db.vpcId,
    name: db.name,
    engine: db.engine,
    instance_type: db.instanceType,
    storage_gb: db.storageGb,
    postgres_version: db.engine === 'postgresql' ? db.version : null,
    mysql_version: db.engine === 'mysql' ? db.version : null,
    replicas: db.replicas,
    external_access_enabled: db.externalAccessEnabled,
    status: db.status,
    status_reason: db.status === 'error' ? db.statusReason : null,
    created_at: db.createdAt.toISOString(),
    updated_at: db.updatedAt.toISOString(),
  };
}

export function ruleToJson(rule: AllowlistRule): Record<string, unknown> {
  return {
    id: rule.id,
    database_id: rule.databaseId,
    cidr: rule.cidr,
    description: rule.description,
    created_at: rule.createdAt.toISOString(),
  };
}
