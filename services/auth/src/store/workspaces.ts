import type { WorkspaceRecords } from '../domain/store-port.ts';
import { type Knex, keysetPage, type Page, type PageRequest } from '@pier/kit';
import type { MyWorkspaceRow, WorkspaceRow } from '../domain/records.ts';

export class WorkspaceStore implements WorkspaceRecords {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  async insert(row: { id: string; name: string; created_by: string }): Promise<WorkspaceRow> {
    const [created] = await this.db('workspaces').insert(row).returning<WorkspaceRow[]>('*');
    return created!;
  }

  async listForUser(userId: string, page: PageRequest): Promise<Page<MyWorkspaceRow>> {
    const q = this.db('workspaces as w').join('memberships as m', 'm.workspace_id', 'w.id').where('m.user_id', userId).select('w.*', 'm.role');
    return keysetPage(q, page, { createdAt: 'w.created_at', id: 'w.id' });
  }

  async getForUser(workspaceId: string, userId: string): Promise<MyWorkspaceRow | undefined> {
    return this.db('workspaces as w')
      .join('memberships as m', 'm.workspace_id', 'w.id')
      .where({ 'w.id': workspaceId, 'm.user_id': userId })
      .first('w.*', 'm.role');
  }

  /**
   * Locks the workspace row until the transaction ends, so membership changes in one
   * workspace happen one at a time (two admins demoting the last two owners at once must
   * not both succeed). Returns false when the workspace does not exist.
   */
  async lock(workspaceId: string): Promise<boolean> {
    const row = await this.db('workspaces').where({ id: workspaceId }).forUpdate().first('id');
    return row !== undefined;
  }
}
