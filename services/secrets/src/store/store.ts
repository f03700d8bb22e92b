import {
  insertForKey,
  keysetPage,
  mapPage,
  readInstallationId,
  translatePgError,
  writeEvent,
  isUuid,
  type Knex,
  type Page,
  type PageRequest,
  type PierEvent,
} from '@pier/kit';
import type { Scope, SecretRecord, SecretState } from '../domain/records.ts';
import type { SecretsStore } from '../domain/store-port.ts';

type Db = Knex | Knex.Transaction;

interface Row {
  id: string;
  workspace_id: string;
  vpc_id: string;
  name: string;
  keys: string[];
  state: SecretState;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = ['id', 'workspace_id', 'vpc_id', 'name', 'keys', 'state', 'created_at', 'updated_at'];

function toRecord(r: Row): SecretRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    vpcId: r.vpc_id,
    name: r.name,
    keys: r.keys,
    state: r.state,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export class KnexSecretsStore implements SecretsStore {
  constructor(private readonly db: Db) {}

  transaction<T>(fn: (tx: SecretsStore) => Promise<T>): Promise<T> {
    return (this.db as Knex).transaction((trx) => fn(new KnexSecretsStore(trx)));
  }

  writeEvent(event: PierEvent): Promise<void> {
    return writeEvent(this.db, event);
  }

  async insertCreating(scope: Scope, name: string, keys: string[]): Promise<SecretRecord> {
    try {
      const row = await insertForKey(this.db as Knex, async (q) => {
        const [inserted] = await q('secrets')
          .insert({ workspace_id: scope.workspaceId, vpc_id: scope.vpcId, name, keys, state: 'creating' })
          .returning(COLUMNS);
        return inserted as Row;
      });
      return toRecord(row);
    } catch (err) {
      translatePgError(err, { unique: `a secret named ${name} already exists in this VPC` });
    }
  }

  async markReady(id: string): Promise<SecretRecord | undefined> {
    const [row] = await this.db<Row>('secrets').where({ id, state: 'creating' }).update({ state: 'ready', updated_at: this.db.fn.now() }).returning(COLUMNS);
    return row ? toRecord(row as Row) : undefined;
  }

  async removeCreating(id: string): Promise<boolean> {
    return (await this.db('secrets').where({ id, state: 'creating' }).delete()) > 0;
  }

  async get(scope: Scope, id: string): Promise<SecretRecord | undefined> {
    if (!isUuid(id)) return undefined;
    const row: Row | undefined = await this.scoped(scope).where({ id, state: 'ready' }).first(COLUMNS);
    return row ? toRecord(row) : undefined;
  }

  async list(scope: Scope, page: PageRequest): Promise<Page<SecretRecord>> {
    return mapPage(await keysetPage<Row>(this.scoped(scope).where({ state: 'ready' }).select(COLUMNS), page), toRecord);
  }

  async findReady(scope: Scope, ids: string[]): Promise<SecretRecord[]> {
    const valid = ids.filter(isUuid);
    if (valid.length === 0) return [];
    const rows: Row[] = await this.scoped(scope).where({ state: 'ready' }).whereIn('id', valid).select(COLUMNS);
    return rows.map(toRecord);
  }

  async beginDelete(scope: Scope, id: string): Promise<SecretRecord | undefined> {
    if (!isUuid(id)) return undefined;
    const [row] = await this.scoped(scope).where({ id, state: 'ready' }).update({ state: 'deleting', updated_at: this.db.fn.now() }).returning(COLUMNS);
    return row ? toRecord(row as Row) : undefined;
  }

  async revertDelete(id: string): Promise<void> {
    await this.db('secrets').where({ id, state: 'deleting' }).update({ state: 'ready', updated_at: this.db.fn.now() });
  }

  async removeDeleting(id: string): Promise<SecretRecord | undefined> {
    const [row] = await this.db<Row>('secrets').where({ id, state: 'deleting' }).delete().returning(COLUMNS);
    return row ? toRecord(row as Row) : undefined;
  }

  async stalePending(before: Date): Promise<SecretRecord[]> {
    const rows: Row[] = await this.db('secrets').whereNot({ state: 'ready' }).where('updated_at', '<', before).orderBy('updated_at').limit(500).select(COLUMNS);
    return rows.map(toRecord);
  }

  installationId(): Promise<string> {
    return readInstallationId(this.db);
  }

  async existingIds(ids: string[]): Promise<Set<string>> {
    const valid = ids.filter(isUuid);
    if (valid.length === 0) return new Set();
    const rows: { id: string }[] = await this.db('secrets').whereIn('id', valid).select('id');
    return new Set(rows.map((r) => r.id));
  }

  async countInVpc(vpcId: string): Promise<number> {
    const row = await this.db('secrets').where({ vpc_id: vpcId }).count<{ count: number }[]>({ count: '*' }).first();
    return Number(row?.count ?? 0);
  }

  private scoped(scope: Scope) {
    return this.db('secrets').where({ workspace_id: scope.workspaceId, vpc_id: scope.vpcId });
  }
}
