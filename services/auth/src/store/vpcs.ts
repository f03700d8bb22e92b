import { translatePgError, type Knex } from '@pier/kit';
import type { Position } from '../domain/pagination.ts';
import { paged } from './page-query.ts';
import type { VpcRow } from './rows.ts';

export class VpcStore {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  async insert(row: { id: string; workspace_id: string; name: string }): Promise<VpcRow> {
    try {
      const [created] = await this.db('vpcs').insert(row).returning<VpcRow[]>('*');
      return created!;
    } catch (err) {
      translatePgError(err, { unique: `a VPC named "${row.name}" already exists in this workspace` });
    }
  }

  async list(workspaceId: string, limit: number, after?: Position): Promise<VpcRow[]> {
    return paged(this.db('vpcs as v').where('v.workspace_id', workspaceId).select('v.*'), 'v', 'id', limit, after);
  }

  async get(workspaceId: string, vpcId: string): Promise<VpcRow | undefined> {
    return this.db<VpcRow>('vpcs').where({ workspace_id: workspaceId, id: vpcId }).first();
  }

  async delete(workspaceId: string, vpcId: string): Promise<VpcRow | undefined> {
    const [row] = await this.db('vpcs').where({ workspace_id: workspaceId, id: vpcId }).delete().returning<VpcRow[]>('*');
    return row;
  }
}
