import type { SessionRecords } from '../domain/store-port.ts';
import { type Knex, keysetPage, type Page, type PageRequest } from '@pier/kit';
import type { SessionRow } from '../domain/records.ts';

const columns = ['id', 'user_id', 'name', 'expires_at', 'created_at', 'last_used_at', 'revoked_at'];

export class CliSessionStore implements SessionRecords {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  async insert(row: { id: string; user_id: string; name: string | null; token_hash: string; expires_at: Date; created_at: Date }): Promise<SessionRow> {
    const [created] = await this.db('cli_sessions').insert(row).returning<SessionRow[]>(columns);
    return created!;
  }

  /** The user's sessions that are not revoked, expired ones included until revoked. */
  async list(userId: string, page: PageRequest): Promise<Page<SessionRow>> {
    const q = this.db('cli_sessions as s')
      .where('s.user_id', userId)
      .whereNull('s.revoked_at')
      .select(columns.map((c) => `s.${c}`));
    return keysetPage(q, page, { createdAt: 's.created_at', id: 's.id' });
  }

  async revoke(userId: string, sessionId: string): Promise<SessionRow | undefined> {
    const [row] = await this.db('cli_sessions')
      .where({ user_id: userId, id: sessionId })
      .whereNull('revoked_at')
      .update({ revoked_at: this.db.fn.now() })
      .returning<SessionRow[]>(columns);
    return row;
  }
}
