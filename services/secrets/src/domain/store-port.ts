// What secrets' use cases need from its schema: records of names, never values. The domain
// defines it; store/store.ts implements it with knex. A transaction is the same interface
// bound to one connection, and events are written in it (the outbox), with the change.
import type { Page, PageRequest, PierEvent } from '@pier/kit';
import type { Scope, SecretRecord } from './records.ts';

export interface SecretsStore {
  transaction<T>(fn: (tx: SecretsStore) => Promise<T>): Promise<T>;
  writeEvent(event: PierEvent): Promise<void>;

  /** Inserts a record in state `creating`; a name taken in the VPC is a ConflictError. */
  insertCreating(scope: Scope, name: string, keys: string[]): Promise<SecretRecord>;
  /** `creating` -> `ready`; undefined when the record is no longer `creating`. */
  markReady(id: string): Promise<SecretRecord | undefined>;
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
  /** Removes a `deleting` record; the record removed, undefined when there was none. */
  removeDeleting(id: string): Promise<SecretRecord | undefined>;
  /** Records left `creating` or `deleting` since before this (the oldest first, a bounded batch). */
  stalePending(before: Date): Promise<SecretRecord[]>;
  /** Which of these ids have a record, in any state. */
  existingIds(ids: string[]): Promise<Set<string>>;
  /** This installation's id (kit's installation.ts): the kubernetes store labels its Secrets with it. */
  installationId(): Promise<string>;
  /** Records of the VPC in any state: a pending one still occupies the VPC. */
  countInVpc(vpcId: string): Promise<number>;
}
