import type { Role } from '@pier/kit';

// auth's records as its store returns them (snake_case, timestamps as Date).

export interface UserRow {
  id: string;
  email: string;
  created_at: Date;
}

export interface WorkspaceRow {
  id: string;
  name: string;
  created_by: string | null;
  created_at: Date;
}

/** A workspace seen by one of its members. */
export interface MyWorkspaceRow extends WorkspaceRow {
  role: Role;
}

export interface MemberRow {
  workspace_id: string;
  user_id: string;
  email: string;
  role: Role;
  created_at: Date;
}

export interface VpcRow {
  id: string;
  workspace_id: string;
  name: string;
  created_at: Date;
}

export interface ApiKeyRow {
  id: string;
  workspace_id: string;
  user_id: string;
  name: string;
  key_prefix: string;
  scopes: string[];
  expires_at: Date | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

export interface SessionRow {
  id: string;
  user_id: string;
  name: string | null;
  /** The API key the session was minted with, which it lives and dies with; null: none. */
  api_key_id: string | null;
  expires_at: Date;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

export interface BootstrapRow {
  user_id: string;
  workspace_id: string;
  vpc_id: string;
  api_key_id: string;
  created_at: Date;
}

/**
 * What one bearer token resolves to for one request: the user, their role in the asked
 * workspace (null when not a member or none was asked) and whether the asked VPC belongs
 * to that workspace. Looked up on every request and never cached, so a revoked key, a
 * downgrade or a removal bites on the very next request through any gateway.
 */
export interface Resolved {
  credential_id: string | null;
  /** The API key's or CLI session's name (the audit log's credential); null for a user signing in with OIDC. */
  credential_name: string | null;
  /** The API key the credential is, or the key the CLI session was minted with; else null. */
  api_key_id: string | null;
  user_id: string;
  email: string;
  role: Role | null;
  vpc_found: boolean;
  /** When the key or session expires, a session at the latest with its key (null: never, or not a key or session). */
  expires_at: Date | null;
  /** The auth epoch of the snapshot this was read from. */
  epoch: number;
}

export interface Scope {
  /** Already checked to be UUIDs (or null), so the casts below cannot fail. */
  workspaceId: string | null;
  vpcId: string | null;
}
