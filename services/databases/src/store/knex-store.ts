import { translatePgError, writeEvent, InputError, type Knex, type PierEvent } from '@pier/kit';
import type { AllowlistRule, DatabaseRecord, DatabaseStatus } from '../domain/database.ts';
import type { DatabasePatch, DatabasesStore, NewDatabase, Page } from './store.ts';

interface DatabaseRow {
  id: string;
  short_id: string;
  workspace_id: string;
  vpc_id: string;
  name: string;
  engine: DatabaseRecord['engine'];
  instance_type: DatabaseRecord['instanceType'];
  storage_gb: number;
  version: string;
  replicas: number;
  external_access_enabled: boolean;
  status: DatabaseStatus;
  status_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

const fromRow = (r: DatabaseRow): DatabaseRecord => ({
  id: r.id,
  shortId: r.short_id,
  workspaceId: r.workspace_id,
  vpcId: r.vpc_id,
  name: r.name,
  engine: r.engine,
  instanceType: r.instance_type,
  storageGb: r.storage_gb,
  version: r.version,
  replicas: r.replicas,
  externalAccessEnabled: r.external_access_enabled,
  status: r.status,
  statusReason: r.status_reason,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const ruleFromRow = (r: { id: string; database_id: string; cidr: string; description: string; created_at: Date }): AllowlistRule => ({
  id: r.id,
  databaseId: r.database_id,
  cidr: r.cidr,
  description: r.description,
  createdAt: r.created_at,
});

/** Keyset cursor over (created_at, id): stable under inserts, opaque to clients. */
function encodeCursor(r: DatabaseRow): string {
  return Buffer.from(JSON.stringify([r.created_at.toISOString(), r.id])).toString('base64url');
}

function decodeCursor(cursor: string): [string, string] {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && !Number.isNaN(Date.parse(v[0]))) {
      return [v[0], v[1]];
    }
  } catch {
    // fall through
  }
  throw new InputError('cursor: not a cursor this list returned', 'invalid_request', { field: 'cursor' });
}

export class KnexDatabasesStore implements DatabasesStore {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  async transaction<T>(fn: (tx: DatabasesStore) => Promise<T>): Promise<T> {
    return this.db.transaction((trx) => fn(new KnexDatabasesStore(trx)));
  }

  private live() {
    return this.db<DatabaseRow>('databases').whereNull('deleted_at');
  }

  async list(vpcId: string, page: { limit: number; cursor?: string }): Promise<Page<DatabaseRecord>> {
    const q = this.live().where({ vpc_id: vpcId }).orderBy([{ column: 'created_at' }, { column: 'id' }]).limit(page.limit + 1);
    if (page.cursor) {
      const [at, id] = decodeCursor(page.cursor);
      q.whereRaw('(created_at, id) > (?::timestamptz, ?::uuid)', [at, id]);
    }
    const rows = (await q) as DatabaseRow[];
    const more = rows.length > page.limit;
    const kept = more ? rows.slice(0, page.limit) : rows;
    return { items: kept.map(fromRow), nextCursor: more ? encodeCursor(kept[kept.length - 1]!) : null };
  }

  async get(vpcId: string, id: string): Promise<DatabaseRecord | undefined> {
    const row = (await this.live().where({ vpc_id: vpcId, id }).first()) as DatabaseRow | undefined;
    return row && fromRow(row);
  }

  async lock(id: string): Promise<void> {
    await this.db('databases').where({ id }).forUpdate().first('id');
  }

  async unsettled(): Promise<DatabaseRecord[]> {
    const rows = (await this.live().whereIn('status', ['creating', 'deleting'])) as DatabaseRow[];
    return rows.map(fromRow);
  }

  async nameTaken(vpcId: string, name: string, exceptId?: string): Promise<boolean> {
    const q = this.live().where({ vpc_id: vpcId, name });
    if (exceptId) q.whereNot({ id: exceptId });
    return !!(await q.first('id'));
  }

  async insert(d: NewDatabase): Promise<DatabaseRecord> {
    try {
      const [row] = (await this.db('databases')
        .insert({
          id: d.id,
          short_id: d.shortId,
          workspace_id: d.workspaceId,
          vpc_id: d.vpcId,
          name: d.name,
          engine: d.engine,
          instance_type: d.instanceType,
          storage_gb: d.storageGb,
          version: d.version,
          replicas: d.replicas,
          external_access_enabled: d.externalAccessEnabled,
          status: d.status,
        })
        .returning('*')) as DatabaseRow[];
      return fromRow(row!);
    } catch (err) {
      translateConstraint(err);
    }
  }

  async update(id: string, patch: DatabasePatch): Promise<DatabaseRecord> {
    const values: Record<string, unknown> = { updated_at: this.db.fn.now() };
    if (patch.name !== undefined) values.name = patch.name;
    if (patch.instanceType !== undefined) values.instance_type = patch.instanceType;
    if (patch.storageGb !== undefined) values.storage_gb = patch.storageGb;
    if (patch.externalAccessEnabled !== undefined) values.external_access_enabled = patch.externalAccessEnabled;
    try {
      const [row] = (await this.db('databases').where({ id }).update(values).returning('*')) as DatabaseRow[];
      return fromRow(row!);
    } catch (err) {
      translateConstraint(err);
    }
  }

  async setStatus(id: string, status: DatabaseStatus, reason: string | null): Promise<DatabaseRecord> {
    const values: Record<string, unknown> = { status, status_reason: reason, updated_at: this.db.fn.now() };
    if (status === 'deleted') values.deleted_at = this.db.fn.now();
    const [row] = (await this.db('databases').where({ id }).update(values).returning('*')) as DatabaseRow[];
    return fromRow(row!);
  }

  async countLive(vpcId: string): Promise<number> {
    const row = (await this.live().where({ vpc_id: vpcId }).count<{ n: number }[]>({ n: '*' }).first()) as { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }

  async rules(databaseId: string): Promise<AllowlistRule[]> {
    const rows = await this.db('allowlist_rules').where({ database_id: databaseId }).orderBy([{ column: 'created_at' }, { column: 'id' }]);
    return rows.map(ruleFromRow);
  }

  async addRule(databaseId: string, cidr: string, description: string): Promise<AllowlistRule> {
    try {
      const [row] = await this.db('allowlist_rules').insert({ database_id: databaseId, cidr, description }).returning('*');
      return ruleFromRow(row);
    } catch (err) {
      translatePgError(err, { unique: `the allowlist already has a rule for ${cidr}` });
    }
  }

  async removeRule(databaseId: string, ruleId: string): Promise<boolean> {
    return (await this.db('allowlist_rules').where({ database_id: databaseId, id: ruleId }).delete()) > 0;
  }

  async event(e: PierEvent): Promise<void> {
    await writeEvent(this.db, e);
  }
}

/** Which unique index a violation hit decides the message. */
function translateConstraint(err: unknown): never {
  const e = err as { code?: string; constraint?: string };
  if (e?.code === '23505' && e.constraint === 'databases_short_id_live') throw new ShortIdTaken();
  translatePgError(err, { unique: 'a database with this name already exists in the VPC' });
}

/** Two live databases drew UUIDs with the same first 8 characters: draw again. */
export class ShortIdTaken extends Error {
  constructor() {
    super('short id taken');
  }
}
