import type { UserRecords } from '../domain/store-port.ts';
import type { Knex } from '@pier/kit';
import type { UserRow } from '../domain/records.ts';

export class UserStore implements UserRecords {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  async byId(id: string): Promise<UserRow | undefined> {
    return this.db<UserRow>('users').where({ id }).first();
  }

  /** The user with this e-mail, created when unknown. Safe against concurrent callers. */
  async findOrCreate(email: string): Promise<UserRow> {
    const normalized = email.toLowerCase();
    const inserted = await this.db('users').insert({ email: normalized }).onConflict('email').ignore().returning<UserRow[]>(['id', 'email', 'created_at']);
    if (inserted[0]) return inserted[0];
    const existing = await this.db<UserRow>('users').where({ email: normalized }).first();
    if (!existing) throw new Error(`user ${normalized} vanished between insert and select`);
    return existing;
  }
}
