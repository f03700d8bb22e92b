// The databases service's persistence as the domain needs it; store/knex-store.ts is the
// one implementation. Reads that clients see return only provisioned, not soft-deleted
// rows; the background work also sees the rows a request (or a crash) left pending.
import type { Page, PageRequest, PierEvent } from '@pier/kit';
import type { AllowlistRule, DatabaseRecord, DatabaseStatus, PendingChange, RuleState } from './database.ts';
import type { BackupMethod, BackupRecord, BackupSchedule, BackupStatus } from './backup-records.ts';

export type NewDatabase = Pick<
  DatabaseRecord,
  | 'id'
  | 'shortId'
  | 'workspaceId'
  | 'vpcId'
  | 'name'
  | 'engine'
  | 'instanceType'
  | 'storageGb'
  | 'version'
  | 'replicas'
  | 'externalAccessEnabled'
  | 'restoreSource'
>;

/** A backup's state as the repository reports it, written over the record's. */
export type BackupSync = Pick<BackupRecord, 'status' | 'sizeBytes' | 'completedAt' | 'error' | 'ref'>;

/** A backup the repository holds that has no record (one a crash left unrecorded). */
export type AdoptedBackup = Pick<BackupRecord, 'name' | 'method' | 'status' | 'sizeBytes' | 'startedAt' | 'completedAt' | 'error' | 'ref'>;

export interface DatabasesStore {
  /** Runs `fn` in one transaction: its writes and events commit together or not at all. */
  transaction<T>(fn: (tx: DatabasesStore) => Promise<T>): Promise<T>;
  /** This installation's id: drawn once by a migration, carried by every cluster object it makes. */
  installationId(): Promise<string>;

  list(vpcId: string, page: PageRequest): Promise<Page<DatabaseRecord>>;
  get(vpcId: string, id: string): Promise<DatabaseRecord | undefined>;
  /** A row that is not soft-deleted, provisioned or not (background work). */
  byId(id: string): Promise<DatabaseRecord | undefined>;
  /** The provisioned, not soft-deleted database with this short id (it names external hosts). */
  byShortId(shortId: string): Promise<DatabaseRecord | undefined>;
  /** Provisioned, not soft-deleted databases in one of `statuses`, across VPCs. */
  inStatus(statuses: DatabaseStatus[]): Promise<DatabaseRecord[]>;
  /** Databases of the VPC that hold something in the cluster (pending ones included). */
  countLive(vpcId: string): Promise<number>;
  /** Which of `ids` have a row that is not soft-deleted, provisioned or not. */
  liveIds(ids: string[]): Promise<Set<string>>;

  /**
   * Writes the row invisible (`provisioned` false). A name clash with any live row, pending
   * ones included, is a ConflictError; a short id clash is ShortIdTaken.
   */
  insertUnprovisioned(db: NewDatabase): Promise<DatabaseRecord>;
  markProvisioned(id: string): Promise<DatabaseRecord>;
  deleteUnprovisioned(id: string): Promise<boolean>;
  unprovisioned(createdBefore: Date): Promise<DatabaseRecord[]>;

  /** Whether a live database of the VPC (pending ones included) has the name. */
  nameTaken(vpcId: string, name: string): Promise<boolean>;
  /** A ConflictError when another live database of the VPC has the name. */
  rename(id: string, name: string): Promise<DatabaseRecord>;
  /** Records `change` as pending, and `name` (which the cluster never sees) at once. */
  beginChange(id: string, change: PendingChange, name: string): Promise<DatabaseRecord>;
  /** Makes the pending change the record's own; undefined when none is pending. */
  finishChange(id: string): Promise<DatabaseRecord | undefined>;
  /** Forgets the pending change, putting `name` back when given. */
  dropChange(id: string, name?: string): Promise<void>;
  pendingChanges(since: Date): Promise<DatabaseRecord[]>;

  setStatus(id: string, status: DatabaseStatus, reason: string | null): Promise<DatabaseRecord>;
  /** Moves the status only if it still is `from`, so two writers racing emit one event. */
  compareAndSetStatus(id: string, from: DatabaseStatus, to: DatabaseStatus, reason: string | null): Promise<DatabaseRecord | undefined>;

  /** The database's rules in `states` (all states when absent), oldest first. */
  rules(databaseId: string, states?: RuleState[]): Promise<AllowlistRule[]>;
  /** One page of the rules in `states`, oldest first. */
  rulePage(databaseId: string, states: RuleState[], page: PageRequest): Promise<Page<AllowlistRule>>;
  rule(databaseId: string, ruleId: string): Promise<AllowlistRule | undefined>;
  /** Writes the rule `adding`; a ConflictError when the database already has that block. */
  insertRule(databaseId: string, cidr: string, description: string): Promise<AllowlistRule>;
  setRuleState(ruleId: string, from: RuleState, to: RuleState): Promise<AllowlistRule | undefined>;
  deleteRule(ruleId: string, state: RuleState): Promise<boolean>;
  /** Rules that entered `adding` or `removing` before `since`, across databases. */
  pendingRules(since: Date): Promise<AllowlistRule[]>;

  /** A soft-deleted database of the VPC, deleted at or after `since` (its backups are still kept). */
  deletedSince(vpcId: string, id: string, since: Date): Promise<DatabaseRecord | undefined>;
  setArchivedUntil(id: string, at: Date): Promise<void>;
  /** Soft-deleted databases deleted before `before` whose backups are not purged yet. */
  purgeDue(before: Date): Promise<DatabaseRecord[]>;
  /** Records that a deleted database's backups are gone: its backup records and schedule go too. */
  markPurged(id: string): Promise<void>;
  /** Live databases (provisioned or not) being made from `sourceId`'s backups. */
  restoringFrom(sourceId: string): Promise<DatabaseRecord[]>;

  /** Writes the backup pending (`started` false); a ConflictError when the database has one of that name. */
  insertBackup(databaseId: string, name: string, method: BackupMethod): Promise<BackupRecord>;
  markBackupStarted(id: string): Promise<BackupRecord>;
  deleteBackupRow(id: string): Promise<boolean>;
  /** Started backups not being deleted, newest first. */
  backups(databaseId: string): Promise<BackupRecord[]>;
  backupPage(databaseId: string, page: PageRequest): Promise<Page<BackupRecord>>;
  /** A backup by name, any state (pending and being deleted ones included). */
  backupByName(databaseId: string, name: string): Promise<BackupRecord | undefined>;
  /** Inserts a started backup unless one of that name exists (then undefined). */
  adoptBackup(databaseId: string, b: AdoptedBackup): Promise<BackupRecord | undefined>;
  /** Writes the repository's view over the record if its status still is `from`, so two readers emit one event. */
  syncBackup(id: string, from: BackupStatus, sync: BackupSync): Promise<BackupRecord | undefined>;
  /** Marks a started backup as being deleted (hidden); undefined when it no longer is as read. */
  beginBackupDelete(id: string): Promise<BackupRecord | undefined>;
  cancelBackupDelete(id: string): Promise<void>;
  /** Backups written pending, or marked for deletion, before `before`: what a crash left. */
  pendingBackups(before: Date): Promise<BackupRecord[]>;
  deletingBackups(before: Date): Promise<BackupRecord[]>;
  /** Ids of live databases with a started backup still `running`. */
  databasesWithRunningBackups(): Promise<string[]>;
  /** Ids of live databases with more completed scheduled backups than their schedule keeps. */
  databasesOverRetention(): Promise<string[]>;

  /** The database's schedule; every database gets one when it is provisioned. */
  schedule(databaseId: string): Promise<BackupSchedule | undefined>;
  putSchedule(schedule: BackupSchedule): Promise<BackupSchedule>;
  /** Enabled schedules due at `now`, of provisioned databases that are not deleted. */
  dueSchedules(now: Date): Promise<BackupSchedule[]>;
  setNextRun(databaseId: string, at: Date | null): Promise<void>;

  event(e: PierEvent): Promise<void>;
}
