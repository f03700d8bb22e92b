// The records the databases service keeps, and the names derived from them.
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
  /** False until the cluster accepted the provision; such a row is never shown to clients. */
  provisioned: boolean;
  /** A resize or external-access change asked of the cluster and not yet committed. */
  pendingChange: PendingChange | null;
  pendingSince: Date | null;
  /** Set on a database made from another's backup (restore, fork). */
  restoreSource: RestoreSource | null;
  /**
   * postgresql: the archive was made complete up to this instant when the database was
   * deleted (the end of its recovery window from then on); null when that could not be done.
   */
  archivedUntil: Date | null;
  createdAt: Date;
  updatedAt: Date;
  /** Soft deletion: the record stays, out of every list, while its backups are kept. */
  deletedAt: Date | null;
}

/** The part of a database the cluster runs that PATCH (and PATCH replicas) can change. */
export interface PendingChange {
  instanceType: InstanceType;
  storageGb: number;
  externalAccessEnabled: boolean;
  replicas: number;
}

/**
 * `adding`: written, the cluster being told to admit it; `active`: in force; `removing`:
 * the cluster being told to drop it. What a crash leaves `adding` is undone (the client
 * never got its 201), what it leaves `removing` is finished (the client asked for it).
 */
export const RULE_STATES = ['adding', 'active', 'removing'] as const;
export type RuleState = (typeof RULE_STATES)[number];

export interface AllowlistRule {
  id: string;
  databaseId: string;
  cidr: string;
  description: string;
  state: RuleState;
  createdAt: Date;
  /** When the rule entered its state: a pending one older than the grace was left by a crash. */
  updatedAt: Date;
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

/** What a database made from another's backup (a restore or a fork) was made from. */
export interface RestoreSource {
  kind: 'restore' | 'fork';
  databaseId: string;
  shortId: string;
  vpcId: string;
  engine: Engine;
  /** The backup restored; for a point-in-time restore, the newest one before the target. */
  backupName: string;
  /**
   * The repository id of the backup to restore from. Null for a point-in-time restore
   * without a named backup: the backup tool picks the newest one before the target.
   */
  backupRef: string | null;
  /** postgresql: recover to this instant (ISO 8601) instead of the end of the backup. */
  targetTime: string | null;
}
