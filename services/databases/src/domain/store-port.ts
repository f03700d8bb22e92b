import type { PierEvent } from '@pier/kit';
import type { AllowlistRule, DatabaseRecord, DatabaseStatus } from '../domain/database.ts';

// The databases service's persistence, as an interface the operations depend on; the
// knex implementation is in knex-store.ts.

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface NewDatabase extends Omit<DatabaseRecord, 'createdAt' | 'updatedAt' | 'statusReason'> {}

export type DatabasePatch = Partial<Pick<DatabaseRecord, 'name' | 'instanceType' | 'storageGb' | 'externalAccessEnabled'>>;

export interface DatabasesStore {
  /** Runs `fn` in one transaction: its writes and events commit together or not at all. */
  transaction<T>(fn: (tx: DatabasesStore) => Promise<T>): Promise<T>;
  list(vpcId: string, page: { limit: number; cursor?: string }): Promise<Page<DatabaseRecord>>;
  /** A live (not soft-deleted) database of the VPC, or undefined. */
  get(vpcId: string, id: string): Promise<DatabaseRecord | undefined>;
  /**
   * Locks the database's row until the transaction ends: changes that render the whole
   * access configuration (allowlist, external access) must not interleave.
   */
  lock(id: string): Promise<void>;
  /** Every database in `deleting` or `creating`, across VPCs (crash recovery). */
  unsettled(): Promise<DatabaseRecord[]>;
  nameTaken(vpcId: string, name: string, exceptId?: string): Promise<boolean>;
  insert(db: NewDatabase): Promise<DatabaseRecord>;
  update(id: string, patch: DatabasePatch): Promise<DatabaseRecord>;
  setStatus(id: string, status: DatabaseStatus, reason: string | null): Promise<DatabaseRecord>;
  countLive(vpcId: string): Promise<number>;
  rules(databaseId: string): Promise<AllowlistRule[]>;
  addRule(databaseId: string, cidr: string, description: string): Promise<AllowlistRule>;
  removeRule(databaseId: string, ruleId: string): Promise<boolean>;
  event(e: PierEvent): Promise<void>;
}
