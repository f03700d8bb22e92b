import type { MemberRecords } from '../domain/store-port.ts';
import { type Knex, type Role, keysetPage, type Page, type PageRequest } from '@pier/kit';
import type { MemberRow } from '../domain/records.ts';

const columns = ['m.workspace_id', 'm.user_id', 'u.email', 'm.role', 'm.created_at'];

export class MemberStore implements MemberRecords {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  async list(workspaceId: string, page: PageRequest): Promise<Page<MemberRow>> {
    const q = this.db('memberships as m').join('users as u', 'u.id', 'm.user_id').where('m.workspace_id', workspaceId).select(columns);
    return keysetPage(q, page, { createdAt: 'm.created_at', id: 'm.user_id' });
  }

  async get(workspaceId: string, userId: string): Promise<MemberRow | undefined> {
    return this.db('memberships as m').join('users as u', 'u.id', 'm.user_id').where({ 'm.workspace_id': workspaceId, 'm.user_id': userId }).first(columns);
  }

  /** Inserts the membership; returns false when the user is already a member. */
  async add(workspaceId: string, userId: string, role: Role): Promise<boolean> {
    const rows = await this.db('memberships')
      .insert({ workspace_id: workspaceId, user_id: userId, role })
      .onConflict(['workspace_id', 'user_id'])
      .ignore()
      .returning('user_id');
    return rows.length === 1;
  }

  async setRole(workspaceId: string, userId: string, role: Role): Promise<void> {
    await this.db('memberships').where({ workspace_id: workspaceId, user_id: userId }).update({ role });
  }

  async remove(workspaceId: string, userId: string): Promise<void> {
    await this.db('memberships').where({ workspace_id: workspaceId, user_id: userId }).delete();
  }

  async countOwners(workspaceId: string): Promise<number> {
    const row = await this.db('memberships').where({ workspace_id: workspaceId, role: 'owner' }).count<{ count: number }[]>('* as count').first();
    return Number(row?.count ?? 0);
  }
}
