import { randomUUID } from 'node:crypto';
import { AuthenticationError, mapPage, type Page, type PageRequest } from '@pier/kit';
import type { AuthContext } from './context.ts';
import type { NewSessionRow } from './store-port.ts';
import { changingAnswers } from './answer-caches.ts';
import { INVALID_API_KEY } from './authenticate.ts';
import type { SessionRow } from './records.ts';
import { requireId, sessionNotFound } from './ids.ts';
import { withPendingUse } from './last-use.ts';
import { DEFAULT_SESSION_DAYS, expiryAfterDays } from './limits.ts';
import { generateSessionToken } from './tokens.ts';

// CLI sessions belong to one user and are managed by that user only.

/**
 * Mints a session for `userId`. A caller acting with an API key (`apiKeyId`: the key, or
 * the key its own session was minted with) gets a session bound to that key, so revoking
 * the key is still a kill switch: it is revoked in the key's revoke, expires no later
 * than the key, and is judged with the key on every request (store/credentials.ts).
 */
export async function createCliSession(
  ctx: AuthContext,
  userId: string,
  input: { name?: string; expiresInDays?: number; apiKeyId?: string },
): Promise<SessionRow & { token: string }> {
  const { token, tokenHash } = generateSessionToken();
  // One clock for both instants, so a session lasts exactly the days asked for.
  const now = ctx.now();
  const row: NewSessionRow = {
    id: randomUUID(),
    user_id: userId,
    name: input.name ?? null,
    token_hash: tokenHash,
    expires_at: expiryAfterDays(input.expiresInDays ?? DEFAULT_SESSION_DAYS, now)!,
    created_at: now,
    api_key_id: null,
  };
  const keyId = input.apiKeyId;
  if (keyId === undefined) return { ...(await ctx.store.sessions.insert(row)), token };
  return ctx.store.transaction(async (tx) => {
    // Held until the insert commits: a revoke of the key racing this one either commits
    // first (the key is not live: 401) or waits, then revokes this session with the key.
    const key = await tx.apiKeys.holdLive(keyId, userId);
    // The identity token was signed moments ago, but the key may have been revoked since.
    if (!key) throw new AuthenticationError(INVALID_API_KEY, 'invalid_api_key');
    const expiresAt = key.expires_at && key.expires_at < row.expires_at ? key.expires_at : row.expires_at;
    return { ...(await tx.sessions.insert({ ...row, expires_at: expiresAt, api_key_id: key.id })), token };
  });
}

export async function listCliSessions(ctx: AuthContext, userId: string, page: PageRequest): Promise<Page<SessionRow>> {
  return mapPage(await ctx.store.sessions.list(userId, page), (r) => withPendingUse(ctx, 'cli_sessions', r));
}

export async function revokeCliSession(ctx: AuthContext, userId: string, sessionId: string): Promise<void> {
  const id = requireId(sessionId, 'CLI session', 'cli_session_not_found');
  await changingAnswers(ctx, async (tx) => {
    if (!(await tx.sessions.revoke(userId, id))) throw sessionNotFound();
  });
}
