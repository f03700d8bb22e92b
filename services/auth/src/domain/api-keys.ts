import { randomUUID } from 'node:crypto';
import { mapPage, type Page, type PageRequest } from '@pier/kit';
import { inTransaction, type AuthContext } from './context.ts';
import { changingAnswers } from './answer-caches.ts';
import type { ApiKeyRow } from './records.ts';
import { apiKeyCreated, apiKeyRevoked } from './events.ts';
import { apiKeyNotFound, requireId } from './ids.ts';
import { withPendingUse } from './last-use.ts';
import { expiryAfterDays } from './limits.ts';
import { generateApiKey } from './tokens.ts';

export interface CreateApiKey {
  name: string;
  expiresInDays?: number;
  scopes: string[];
}

export async function listApiKeys(ctx: AuthContext, workspaceId: string, page: PageRequest): Promise<Page<ApiKeyRow>> {
  const ws = requireId(workspaceId, 'workspace', 'workspace_not_found');
  return mapPage(await ctx.store.apiKeys.list(ws, page), (r) => withPendingUse(ctx, 'api_keys', r));
}

/** Creates a key acting as `actorId`; the full key is in the result and nowhere else. */
export function createApiKey(ctx: AuthContext, actorId: string, workspaceId: string, input: CreateApiKey): Promise<ApiKeyRow & { key: string }> {
  const ws = requireId(workspaceId, 'workspace', 'workspace_not_found');
  const secret = generateApiKey();
  const now = ctx.now();
  const expiresAt = expiryAfterDays(input.expiresInDays, now);
  return inTransaction(ctx, async (tx) => {
    const row = await tx.apiKeys.insert({
      id: randomUUID(),
      workspace_id: ws,
      user_id: actorId,
      name: input.name,
      key_prefix: secret.keyPrefix,
      key_hash: secret.keyHash,
      scopes: input.scopes,
      expires_at: expiresAt,
      created_at: now,
    });
    await tx.writeEvent(apiKeyCreated(ws, row.id, row.name, expiresAt, input.scopes, actorId));
    return { ...row, key: secret.key };
  });
}

/**
 * Revokes a live key for good, and with it every CLI session minted with it, in one
 * transaction under one raise of the auth epoch: no gateway answers for either once this
 * returns. An unknown or already revoked key is 404.
 */
export function revokeApiKey(ctx: AuthContext, actorId: string, workspaceId: string, keyId: string): Promise<void> {
  const ws = requireId(workspaceId, 'workspace', 'workspace_not_found');
  const id = requireId(keyId, 'API key', 'api_key_not_found');
  return changingAnswers(ctx, async (tx) => {
    const row = await tx.apiKeys.revoke(ws, id);
    if (!row) throw apiKeyNotFound();
    await tx.sessions.revokeForKey(row.id);
    await tx.writeEvent(apiKeyRevoked(ws, row.id, row.name, actorId));
  });
}
