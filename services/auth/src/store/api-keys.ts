import { translatePgError, type Knex, keysetPage, type Page, type PageRequest } from '@pier/kit';
import type { ApiKeyRow } from '../domain/records.ts';
import type { ApiKeyRecords, LiveKey, NewApiKeyRow } from '../domain/store-port.ts';

// Everything but the hash: nothing above the store ever sees it again.
const columns = ['id', 'workspace_id', 'user_id', 'name', 'key_prefix', 'scopes', 'expires_at', 'created_at', 'last_used_at', 'revoked_at'];

export class ApiKeyStore implements ApiKeyRecords {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  async insert(row: NewApiKeyRow): Promise<ApiKeyRow> {
    try {
      const [created] = await this.db('api_keys')
        .insert({ ...row, scopes: JSON.stringify(row.scopes) })
        .returning<ApiKeyRow[]>(columns);
      return created!;
    } catch (err) {
      translatePgError(err, { unique: `an API key named "${row.name}" already exists in this workspace` });
    }
  }

  async holdLive(keyId: string, userId: string): Promise<LiveKey | undefined> {
    return this.db('api_keys')
      .where({ id: keyId, user_id: userId })
      .whereNull('revoked_at')
      .where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', this.db.fn.now()))
      .forShare()
      .first<LiveKey | undefined>('id', 'expires_at');
  }

  /** Live (not revoked) keys of a workspace, expired ones included. */
  async list(workspaceId: string, page: PageRequest): Promise<Page<ApiKeyRow>> {
    const q = this.db('api_keys as k')
      .where('k.workspace_id', workspaceId)
      .whereNull('k.revoked_at')
      .select(columns.map((c) => `k.${c}`));
    return keysetPage(q, page, { createdAt: 'k.created_at', id: 'k.id' });
  }

  /** Marks a live key revoked; undefined when there is no live key with this id here. */
  async revoke(workspaceId: string, keyId: string): Promise<ApiKeyRow | undefined> {
    const [row] = await this.db('api_keys')
      .where({ workspace_id: workspaceId, id: keyId })
      .whereNull('revoked_at')
      .update({ revoked_at: this.db.fn.now() })
      .returning<ApiKeyRow[]>(columns);
    return row;
  }
}
