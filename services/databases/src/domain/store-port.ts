// The databases service's persistence as the domain needs it; store/knex-store.ts is the
// one implementation. Reads that clients see return only provisioned, not soft-deleted
// rows; the background work also sees the rows a request (or a crash) left pending.
import type { Page, PageRequest, PierEvent } from '@pier/kit';
import type { AllowlistRule, DatabaseRecord, DatabaseStatus, PendingChange, RuleState } from './database.ts';

export type NewDatabase = Pick<
  DatabaseRecord,
  'id' | 'shortId' | 'workspaceId' | 'vpcId' | 'name' | 'engine' | 'instanceType' | 'storageGb' | 'version' | 'replicas' | 'externalAccessEnabled'
>;

export interface DatabasesStore {
  /** Runs `fn` in one transaction: its writes and events commit together or not at all. */
  transaction<T>(fn: (tx: DatabasesStore) => Promise<T>): Promise<T>;
  /** This installation's id: drawn once by a migration, carried by every cluster object it makes. */
  installationId(): Promise<string>;

  list(vpcId: string, page: PageRequest): Promise<Page<DatabaseRecord>>;
  get(vpcId: string, id: string): Promise<DatabaseRecord | undefined>;
  /** A row that is not soft-deleted, provisioned or not (background work). */
  byId(id: string): Promise<DatabaseRecord | undefined>;
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
  rule(databaseId: string, ruleId: string): Promise<AllowlistRule | undefined>;
  /** Writes the rule `adding`; a ConflictError when the database already has that block. */
  insertRule(databaseId: string, cidr: string, description: string): Promise<AllowlistRule>;
  setRuleState(ruleId: string, from: RuleState, to: RuleState): Promise<AllowlistRule | undefined>;
  deleteRule(ruleId: string, state: RuleState): Promise<boolean>;
  /** Rules that entered `adding` or `removing` before `since`, across databases. */
  pendingRules(since: Date): Promise<AllowlistRule[]>;

  event(e: PierEvent): Promise<void>;
}
