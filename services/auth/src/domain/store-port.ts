// What auth's use cases need from its schema. The domain defines it; store/store.ts
// implements it with knex. A transaction is the same interface bound to one connection, so
// a change and its event commit together or not at all.
import type { Page, PageRequest, PierEvent, Role } from '@pier/kit';
import type { ApiKeyRow, BootstrapRow, MemberRow, MyWorkspaceRow, SessionRow, UserRow, VpcRow, WorkspaceRow } from './records.ts';

export interface NewApiKeyRow {
  id: string;
  workspace_id: string;
  user_id: string;
  name: string;
  key_prefix: string;
  key_hash: string;
  scopes: string[];
  expires_at: Date | null;
  /** Defaults to the database's clock when absent. */
  created_at?: Date;
}

export interface UserRecords {
  byId(id: string): Promise<UserRow | undefined>;
  findOrCreate(email: string): Promise<UserRow>;
}

export interface WorkspaceRecords {
  insert(row: { id: string; name: string; created_by: string }): Promise<WorkspaceRow>;
  listForUser(userId: string, page: PageRequest): Promise<Page<MyWorkspaceRow>>;
  getForUser(workspaceId: string, userId: string): Promise<MyWorkspaceRow | undefined>;
  /** Locks the workspace row until the transaction ends; false when it does not exist. */
  lock(workspaceId: string): Promise<boolean>;
}

export interface MemberRecords {
  list(workspaceId: string, page: PageRequest): Promise<Page<MemberRow>>;
  get(workspaceId: string, userId: string): Promise<MemberRow | undefined>;
  /** False when the user is a member already. */
  add(workspaceId: string, userId: string, role: Role): Promise<boolean>;
  setRole(workspaceId: string, userId: string, role: Role): Promise<void>;
  remove(workspaceId: string, userId: string): Promise<void>;
  countOwners(workspaceId: string): Promise<number>;
}

export interface VpcRecords {
  insert(row: { id: string; workspace_id: string; name: string }): Promise<VpcRow>;
  list(workspaceId: string, page: PageRequest): Promise<Page<VpcRow>>;
  get(workspaceId: string, vpcId: string): Promise<VpcRow | undefined>;
  delete(workspaceId: string, vpcId: string): Promise<VpcRow | undefined>;
}

/** What a CLI session minted with an API key needs to know of the key. */
export interface LiveKey {
  id: string;
  expires_at: Date | null;
}

export interface NewSessionRow {
  id: string;
  user_id: string;
  name: string | null;
  token_hash: string;
  expires_at: Date;
  created_at: Date;
  api_key_id: string | null;
}

export interface ApiKeyRecords {
  /** A name taken in the workspace is a ConflictError. */
  insert(row: NewApiKeyRow): Promise<ApiKeyRow>;
  /**
   * The user's key `keyId` if it is live (not revoked, not expired), share-locked until the
   * transaction ends, so that a revoke of it waits for this transaction and then sees
   * what it wrote; undefined when not live.
   */
  holdLive(keyId: string, userId: string): Promise<LiveKey | undefined>;
  /** Live (not revoked) keys of a workspace, expired ones included. */
  list(workspaceId: string, page: PageRequest): Promise<Page<ApiKeyRow>>;
  /** Marks a live key revoked; undefined when there is no live key with this id here. */
  revoke(workspaceId: string, keyId: string): Promise<ApiKeyRow | undefined>;
}

export interface SessionRecords {
  insert(row: NewSessionRow): Promise<SessionRow>;
  list(userId: string, page: PageRequest): Promise<Page<SessionRow>>;
  revoke(userId: string, sessionId: string): Promise<SessionRow | undefined>;
  /** Revokes every live session minted with the key; how many. */
  revokeForKey(keyId: string): Promise<number>;
}

export interface AuthStore {
  readonly users: UserRecords;
  readonly workspaces: WorkspaceRecords;
  readonly members: MemberRecords;
  readonly vpcs: VpcRecords;
  readonly apiKeys: ApiKeyRecords;
  readonly sessions: SessionRecords;
  transaction<T>(fn: (tx: AuthStore) => Promise<T>): Promise<T>;
  /** Writes an event into the outbox of the current transaction (kit's writeEvent). */
  writeEvent(event: PierEvent): Promise<void>;
  /** Raises the auth epoch (domain/answer-caches.ts) in the current transaction; the new value. */
  raiseAuthEpoch(): Promise<number>;
  /** Serialises bootstrap between auth instances starting at once; held until the transaction ends. */
  lockBootstrap(): Promise<void>;
  bootstrapRecord(): Promise<BootstrapRow | undefined>;
  hasUsers(): Promise<boolean>;
  recordBootstrap(row: Omit<BootstrapRow, 'created_at'>): Promise<void>;
}
