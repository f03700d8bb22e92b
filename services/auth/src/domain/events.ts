import type { PierEvent, Role } from '@pier/kit';

// The events auth publishes. Payloads name what changed and who changed it; they never
// carry key material (no key, no hash, no prefix) nor session tokens.

export const workspaceCreated = (workspaceId: string, name: string, by: string): PierEvent => ({
  kind: 'workspace.created',
  workspaceId,
  resourceId: workspaceId,
  data: { name, created_by: by },
});

export const memberAdded = (workspaceId: string, userId: string, role: Role, by: string): PierEvent => ({
  kind: 'member.added',
  workspaceId,
  resourceId: userId,
  data: { user_id: userId, role, by },
});

export const memberRoleChanged = (workspaceId: string, userId: string, from: Role, to: Role, by: string): PierEvent => ({
  kind: 'member.role_changed',
  workspaceId,
  resourceId: userId,
  data: { user_id: userId, from, to, by },
});

export const memberRemoved = (workspaceId: string, userId: string, role: Role, by: string): PierEvent => ({
  kind: 'member.removed',
  workspaceId,
  resourceId: userId,
  data: { user_id: userId, role, by },
});

export const vpcCreated = (workspaceId: string, vpcId: string, name: string, by: string): PierEvent => ({
  kind: 'vpc.created',
  workspaceId,
  vpcId,
  resourceId: vpcId,
  data: { name, by },
});

export const vpcDeleted = (workspaceId: string, vpcId: string, name: string, by: string): PierEvent => ({
  kind: 'vpc.deleted',
  workspaceId,
  vpcId,
  resourceId: vpcId,
  data: { name, by },
});

export const apiKeyCreated = (workspaceId: string, keyId: string, name: string, expiresAt: Date | null, scopes: string[], by: string): PierEvent => ({
  kind: 'api_key.created',
  workspaceId,
  resourceId: keyId,
  data: { name, scopes, expires_at: expiresAt?.toISOString() ?? null, created_by: by },
});

export const apiKeyRevoked = (workspaceId: string, keyId: string, name: string, by: string): PierEvent => ({
  kind: 'api_key.revoked',
  workspaceId,
  resourceId: keyId,
  data: { name, revoked_by: by },
});
