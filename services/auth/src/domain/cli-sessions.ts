import { randomUUID } from 'node:crypto';
import type { AuthStore, NewSessionRow } from './store-port.ts';
import { changingAnswers, type AnswerCaches } from './answer-caches.ts';
import { INVALID_API_KEY } from './authenticate.ts';
import type { SessionRow } from './records.ts';
import { AuthenticationError, mapPage, type Page, type PageRequest } from '@pier/kit';
import { requireId, sessionNotFound } from './ids.ts';
import { DEFAULT_SESSION_DAYS, expiryAfterDays } from './limits.ts';
import { generateSessionToken } from './tokens.ts';

/** CLI sessions belong to one user and are managed by that user only. */
export class CliSessions {
  constructor(
    private readonly store: AuthStore,
    private readonly pending: { pendingFor(table: 'cli_sessions', id: string): Date | undefined },
    private readonly caches: AnswerCaches,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * Mints a session for `userId`. A caller acting with an API key (`apiKeyId`: the key, or
   * the key its own session was minted with) gets a session bound to that key, so revoking
   * the key is still a kill switch: it is revoked in the key's revoke, expires no later
   * than the key, and is judged with the key on every request (store/credentials.ts).
   */
  async create(userId: string, input: { name?: string; expiresInDays?: number; apiKeyId?: string }): Promise<SessionRow & { token: string }> {
    const { token, tokenHash } = generateSessionToken();
    // One clock for both instants, so a session lasts exactly the days asked for.
    const now = this.now();
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
    if (keyId === undefined) return { ...(await this.store.sessions.insert(row)), token };
    return this.store.transaction(async (tx) => {
      // Held until the insert commits: a revoke of the key racing this one either commits
      // first (the key is not live: 401) or waits, then revokes this session with the key.
      const key = await tx.apiKeys.holdLive(keyId, userId);
      // The identity token was signed moments ago, but the key may have been revoked since.
      if (!key) throw new AuthenticationError(INVALID_API_KEY, 'invalid_api_key');
      const expiresAt = key.expires_at && key.expires_at < row.expires_at ? key.expires_at : row.expires_at;
      return { ...(await tx.sessions.insert({ ...row, expires_at: expiresAt, api_key_id: key.id })), token };
    });
  }

  async list(userId: string, page: PageRequest): Promise<Page<SessionRow>> {
    return mapPage(await this.store.sessions.list(userId, page), (r) => {
      const pending = this.pending.pendingFor('cli_sessions', r.id);
      return pending && (!r.last_used_at || pending > r.last_used_at) ? { ...r, last_used_at: pending } : r;
    });
  }

  async revoke(userId: string, sessionId: string): Promise<void> {
    const id = requireId(sessionId, 'CLI session', 'cli_session_not_found');
    await changingAnswers(this.store, this.caches, async (tx) => {
      if (!(await tx.sessions.revoke(userId, id))) throw sessionNotFound();
    });
  }
}
