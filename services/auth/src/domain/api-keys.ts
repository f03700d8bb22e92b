import { randomUUID } from 'node:crypto';
import type { AuthStore } from './store-port.ts';
import { changingAnswers, type AnswerCaches } from './answer-caches.ts';
import type { ApiKeyRow } from './records.ts';
import { mapPage, type Page, type PageRequest } from '@pier/kit';
import { apiKeyCreated, apiKeyRevoked } from './events.ts';
import { apiKeyNotFound, requireId } from './ids.ts';
import { expiryAfterDays } from './limits.ts';
import { generateApiKey } from './tokens.ts';

export interface CreateApiKey {
  name: string;
  expiresInDays?: number;
  scopes: string[];
}

/** Uses of keys seen by this instance and not yet written to the database. */
export interface PendingUse {
  pendingFor(table: 'api_keys', id: string): Date | undefined;
}

export class ApiKeys {
  constructor(
    private readonly store: AuthStore,
    private readonly pending: PendingUse,
    private readonly caches: AnswerCaches,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async list(workspaceId: string, page: PageRequest): Promise<Page<ApiKeyRow>> {
    const ws = requireId(workspaceId, 'workspace', 'workspace_not_found');
    return mapPage(await this.store.apiKeys.list(ws, page), (r) => {
      const pending = this.pending.pendingFor('api_keys', r.id);
      return pending && (!r.last_used_at || pending > r.last_used_at) ? { ...r, last_used_at: pending } : r;
    });
  }

  /** Creates a key acting as `actorId`; the full key is in the result and nowhere else. */
  create(actorId: string, workspaceId: string, input: CreateApiKey): Promise<ApiKeyRow & { key: string }> {
    const ws = requireId(workspaceId, 'workspace', 'workspace_not_found');
    const secret = generateApiKey();
    const now = this.now();
    const expiresAt = expiryAfterDays(input.expiresInDays, now);
    return this.store.transaction(async (tx) => {
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
      await tx.event(apiKeyCreated(ws, row.id, row.name, expiresAt, input.scopes, actorId));
      return { ...row, key: secret.key };
    });
  }

  /**
   * Revokes a live key for good, and with it every CLI session minted with it, in one
   * transaction under one raise of the auth epoch: no gateway answers for either once this
   * returns. An unknown or already revoked key is 404.
   */
  revoke(actorId: string, workspaceId: string, keyId: string): Promise<void> {
    const ws = requireId(workspaceId, 'workspace', 'workspace_not_found');
    const id = requireId(keyId, 'API key', 'api_key_not_found');
    return changingAnswers(this.store, this.caches, async (tx) => {
      const row = await tx.apiKeys.revoke(ws, id);
      if (!row) throw apiKeyNotFound();
      await tx.sessions.revokeForKey(row.id);
      await tx.event(apiKeyRevoked(ws, row.id, row.name, actorId));
    });
  }
}
