import type { VpcRecords } from '../domain/store-port.ts';
import { translatePgError, type Knex, keysetPage, type Page, type PageRequest } from '@pier/kit';
import type { VpcRow } from '../domain/records.ts';

export class VpcStore implements VpcRecords {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  async insert(row: { id: string; workspace_id: string; name: string }): Promise<VpcRow> {
    try {
      const [created] = await this.db('vpcs').insert(row).returning<VpcRow[]>('*');
      return created!;
    } catch (err) {
      translatePgError(err, { unique: `a VPC named "${row.name}" already exists in this workspace` });
    }
  }

  async list(workspaceId: string, page: PageRequest): Promise<Page<VpcRow>> {
    return keysetPage(this.db('vpcs as v').where('v.workspace_id', workspaceId).select('v.*'), page, { createdAt: 'v.created_at', id: 'v.id' });
  }

  async get(workspaceId: string, vpcId: string): Promise<VpcRow | undefined> {
    return this.db<VpcRow>('vpcs').where({ workspace_id: workspaceId, id: vpcId }).first();
  }

  async delete(workspaceId: string, vpcId: string): Promise<VpcRow | undefined> {
    const [row] = await this.db('vpcs').where({ workspace_id: workspaceId, id: vpcId }).delete().returning<VpcRow[]>('*');
    return row;
  }
}
