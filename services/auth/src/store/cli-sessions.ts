import type { NewSessionRow, SessionRecords } from '../domain/store-port.ts';
import { type Knex, keysetPage, type Page, type PageRequest } from '@pier/kit';
import type { SessionRow } from '../domain/records.ts';

const columns = ['id', 'user_id', 'name', 'api_key_id', 'expires_at', 'created_at', 'last_used_at', 'revoked_at'];

export class CliSessionStore implements SessionRecords {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  async insert(row: NewSessionRow): Promise<SessionRow> {
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

  async revokeForKey(keyId: string): Promise<number> {
    return this.db('cli_sessions').where({ api_key_id: keyId }).whereNull('revoked_at').update({ revoked_at: this.db.fn.now() });
  }
}
