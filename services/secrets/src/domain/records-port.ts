import type { Page, PageRequest, PierEvent } from '@pier/kit';
import type { Scope, SecretRecord } from './secret.ts';

/**
 * Persistence of secret records (never values). State changes that announce something
 * write their event in the same transaction.
 */
export interface SecretsStore {
  /** Inserts a record in state `creating`; a name taken in the VPC is a ConflictError. */
  insertCreating(scope: Scope, name: string, keys: string[]): Promise<SecretRecord>;
  /** `creating` -> `ready`, with the event; undefined when the record is no longer `creating`. */
  finishCreate(id: string, event: (r: SecretRecord) => PierEvent): Promise<SecretRecord | undefined>;
  /** Removes a record still `creating` (a create undone). */
  removeCreating(id: string): Promise<boolean>;
  /** A `ready` record in the scope. */
  get(scope: Scope, id: string): Promise<SecretRecord | undefined>;
  /** A page of the scope's `ready` records, oldest first. */
  list(scope: Scope, page: PageRequest): Promise<Page<SecretRecord>>;
  /** `ready` records of the scope among these ids. */
  findReady(scope: Scope, ids: string[]): Promise<SecretRecord[]>;
  /** `ready` -> `deleting`; undefined when there is no such ready record. */
  beginDelete(scope: Scope, id: string): Promise<SecretRecord | undefined>;
  /** `deleting` -> `ready`, when the store could not be reached. */
  revertDelete(id: string): Promise<void>;
  /** Removes a `deleting` record, with the event. */
  finishDelete(id: string, event: (r: SecretRecord) => PierEvent): Promise<boolean>;
  /** Records left `creating` or `deleting` for longer than this. */
  stalePending(olderThanMs: number): Promise<SecretRecord[]>;
  /** Which of these ids have a record, in any state. */
  existingIds(ids: string[]): Promise<Set<string>>;
  /** Records of the VPC in any state: a pending one still occupies the VPC. */
  countInVpc(vpcId: string): Promise<number>;
}
