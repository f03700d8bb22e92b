import { randomUUID } from 'node:crypto';
import type { AuthStore } from './store-port.ts';
import { changingAnswers, type AnswerCaches } from './answer-caches.ts';
import type { SessionRow } from './records.ts';
import { mapPage, type Page, type PageRequest } from '@pier/kit';
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

  async create(userId: string, input: { name?: string; expiresInDays?: number }): Promise<SessionRow & { token: string }> {
    const { token, tokenHash } = generateSessionToken();
    // One clock for both instants, so a session lasts exactly the days asked for.
    const now = this.now();
    const row = await this.store.sessions.insert({
      id: randomUUID(),
      user_id: userId,
      name: input.name ?? null,
      token_hash: tokenHash,
      expires_at: expiryAfterDays(input.expiresInDays ?? DEFAULT_SESSION_DAYS, now)!,
      created_at: now,
    });
    return { ...row, token };
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
