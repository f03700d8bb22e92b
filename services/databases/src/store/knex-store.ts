import {
  insertForKey,
  keysetPage,
  mapPage,
  readInstallationId,
  translatePgError,
  writeEvent,
  type Knex,
  type Page,
  type PageRequest,
  type PierEvent,
} from '@pier/kit';
import type { AllowlistRule, DatabaseRecord, DatabaseStatus, PendingChange, RuleState } from '../domain/database.ts';
import type { BackupMethod, BackupRecord, BackupSchedule, BackupStatus } from '../domain/backup-records.ts';
import { backupFromRow, fromRow, ruleFromRow, scheduleFromRow, type BackupRow, type DatabaseRow, type RuleRow, type ScheduleRow } from './rows.ts';
import type { AdoptedBackup, BackupSync, DatabasesStore, NewDatabase } from '../domain/store-port.ts';
import { ShortIdTaken } from '../domain/errors.ts';

const NAME_TAKEN = 'a database with this name already exists in the VPC';

export class KnexDatabasesStore implements DatabasesStore {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  async transaction<T>(fn: (tx: DatabasesStore) => Promise<T>): Promise<T> {
    return this.db.transaction((trx) => fn(new KnexDatabasesStore(trx)));
  }

  installationId(): Promise<string> {
    return readInstallationId(this.db);
  }

  /** Rows not soft-deleted, provisioned or not. */
  private live() {
    return this.db<DatabaseRow>('databases').whereNull('deleted_at');
  }

  /** What clients may see. */
  private visible() {
    return this.live().where({ provisioned: true });
  }

  private async one(q: Knex.QueryBuilder): Promise<DatabaseRecord | undefined> {
    const [row] = (await q.returning('*')) as DatabaseRow[];
    return row && fromRow(row);
  }

  async list(vpcId: string, page: PageRequest): Promise<Page<DatabaseRecord>> {
    return mapPage(await keysetPage<DatabaseRow>(this.visible().where({ vpc_id: vpcId }), page), fromRow);
  }

  async get(vpcId: string, id: string): Promise<DatabaseRecord | undefined> {
    const row = (await this.visible().where({ vpc_id: vpcId, id }).first()) as DatabaseRow | undefined;
    return row && fromRow(row);
  }

  async byId(id: string): Promise<DatabaseRecord | undefined> {
    const row = (await this.live().where({ id }).first()) as DatabaseRow | undefined;
    return row && fromRow(row);
  }

  async byShortId(shortId: string): Promise<DatabaseRecord | undefined> {
    const row = (await this.visible().where({ short_id: shortId }).first()) as DatabaseRow | undefined;
    return row && fromRow(row);
  }

  async inStatus(statuses: DatabaseStatus[]): Promise<DatabaseRecord[]> {
    const rows = (await this.visible().whereIn('status', statuses).orderBy('created_at')) as DatabaseRow[];
    return rows.map(fromRow);
  }

  async countLive(vpcId: string): Promise<number> {
    const row = (await this.live().where({ vpc_id: vpcId }).count<{ n: number }[]>({ n: '*' }).first()) as { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }

  async liveIds(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = (await this.live().whereIn('id', ids).select('id')) as { id: string }[];
    return new Set(rows.map((r) => r.id));
  }

  async insertUnprovisioned(d: NewDatabase): Promise<DatabaseRecord> {
    try {
      const row = await insertForKey(this.db as Knex, async (q) => {
        const [inserted] = (await q('databases')
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
            restore_source: d.restoreSource && JSON.stringify(d.restoreSource),
            status: 'creating',
            provisioned: false,
          })
          .returning('*')) as DatabaseRow[];
        return inserted!;
      });
      return fromRow(row);
    } catch (err) {
      // Which unique index refused the row decides what it means.
      if ((err as { constraint?: string })?.constraint === 'databases_short_id_live') throw new ShortIdTaken();
      translatePgError(err, { unique: NAME_TAKEN });
    }
  }

  async markProvisioned(id: string): Promise<DatabaseRecord> {
    const db = await this.one(this.db('databases').where({ id }).update({ provisioned: true, updated_at: this.db.fn.now() }));
    if (!db) throw new Error(`database ${id} vanished while it was provisioned`);
    return db;
  }

  async deleteUnprovisioned(id: string): Promise<boolean> {
    return (await this.db('databases').where({ id, provisioned: false }).delete()) > 0;
  }

  async unprovisioned(createdBefore: Date): Promise<DatabaseRecord[]> {
    const rows = (await this.live().where({ provisioned: false }).where('created_at', '<', createdBefore).orderBy('created_at')) as DatabaseRow[];
    return rows.map(fromRow);
  }

  async nameTaken(vpcId: string, name: string): Promise<boolean> {
    return (await this.live().where({ vpc_id: vpcId, name }).first('id')) !== undefined;
  }

  async rename(id: string, name: string): Promise<DatabaseRecord> {
    try {
      return (await this.one(this.db('databases').where({ id }).update({ name, updated_at: this.db.fn.now() })))!;
    } catch (err) {
      translatePgError(err, { unique: NAME_TAKEN });
    }
  }

  async beginChange(id: string, change: PendingChange, name: string): Promise<DatabaseRecord> {
    try {
      const update = { name, pending_change: JSON.stringify(change), pending_since: this.db.fn.now(), updated_at: this.db.fn.now() };
      return (await this.one(this.db('databases').where({ id }).update(update)))!;
    } catch (err) {
      translatePgError(err, { unique: NAME_TAKEN });
    }
  }

  async finishChange(id: string): Promise<DatabaseRecord | undefined> {
    return this.one(
      this.db('databases')
        .where({ id })
        .whereNotNull('pending_change')
        .update({
          instance_type: this.db.raw("pending_change->>'instanceType'"),
          storage_gb: this.db.raw("(pending_change->>'storageGb')::int"),
          external_access_enabled: this.db.raw("(pending_change->>'externalAccessEnabled')::boolean"),
          // A change recorded before replicas could change carries none.
          replicas: this.db.raw("coalesce((pending_change->>'replicas')::int, replicas)"),
          pending_change: null,
          pending_since: null,
          updated_at: this.db.fn.now(),
        }),
    );
  }

  async dropChange(id: string, name?: string): Promise<void> {
    try {
      await this.db('databases')
        .where({ id })
        .update({ pending_change: null, pending_since: null, updated_at: this.db.fn.now(), ...(name === undefined ? {} : { name }) });
    } catch (err) {
      translatePgError(err, { unique: NAME_TAKEN });
    }
  }

  async pendingChanges(since: Date): Promise<DatabaseRecord[]> {
    const rows = (await this.live().whereNotNull('pending_change').where('pending_since', '<', since).orderBy('pending_since')) as DatabaseRow[];
    return rows.map(fromRow);
  }

  async setStatus(id: string, status: DatabaseStatus, reason: string | null): Promise<DatabaseRecord> {
    const values: Record<string, unknown> = { status, status_reason: reason, updated_at: this.db.fn.now() };
    if (status === 'deleted') Object.assign(values, { deleted_at: this.db.fn.now(), pending_change: null, pending_since: null });
    return (await this.one(this.db('databases').where({ id }).update(values)))!;
  }

  async compareAndSetStatus(id: string, from: DatabaseStatus, to: DatabaseStatus, reason: string | null): Promise<DatabaseRecord | undefined> {
    return this.one(this.live().where({ id, status: from }).update({ status: to, status_reason: reason, updated_at: this.db.fn.now() }));
  }

  async rules(databaseId: string, states?: RuleState[]): Promise<AllowlistRule[]> {
    const q = this.db<RuleRow>('allowlist_rules').where({ database_id: databaseId });
    if (states) q.whereIn('state', states);
    const rows = (await q.orderBy([{ column: 'created_at' }, { column: 'id' }])) as RuleRow[];
    return rows.map(ruleFromRow);
  }

  async rulePage(databaseId: string, states: RuleState[], page: PageRequest): Promise<Page<AllowlistRule>> {
    const q = this.db<RuleRow>('allowlist_rules').where({ database_id: databaseId }).whereIn('state', states);
    return mapPage(await keysetPage<RuleRow>(q, page), ruleFromRow);
  }

  async rule(databaseId: string, ruleId: string): Promise<AllowlistRule | undefined> {
    const row = (await this.db<RuleRow>('allowlist_rules').where({ database_id: databaseId, id: ruleId }).first()) as RuleRow | undefined;
    return row && ruleFromRow(row);
  }

  async insertRule(databaseId: string, cidr: string, description: string): Promise<AllowlistRule> {
    try {
      const [row] = (await this.db('allowlist_rules').insert({ database_id: databaseId, cidr, description, state: 'adding' }).returning('*')) as RuleRow[];
      return ruleFromRow(row!);
    } catch (err) {
      translatePgError(err, { unique: `the allowlist already has a rule for ${cidr}` });
    }
  }

  async setRuleState(ruleId: string, from: RuleState, to: RuleState): Promise<AllowlistRule | undefined> {
    const [row] = (await this.db('allowlist_rules')
      .where({ id: ruleId, state: from })
      .update({ state: to, updated_at: this.db.fn.now() })
      .returning('*')) as RuleRow[];
    return row && ruleFromRow(row);
  }

  async deleteRule(ruleId: string, state: RuleState): Promise<boolean> {
    return (await this.db('allowlist_rules').where({ id: ruleId, state }).delete()) > 0;
  }

  async pendingRules(since: Date): Promise<AllowlistRule[]> {
    const rows = (await this.db<RuleRow>('allowlist_rules').whereNot({ state: 'active' }).where('updated_at', '<', since).orderBy('updated_at')) as RuleRow[];
    return rows.map(ruleFromRow);
  }

  async deletedSince(vpcId: string, id: string, since: Date): Promise<DatabaseRecord | undefined> {
    const row = (await this.db<DatabaseRow>('databases')
      .where({ vpc_id: vpcId, id, provisioned: true })
      .where('deleted_at', '>=', since)
      .whereNull('backups_purged_at')
      .first()) as DatabaseRow | undefined;
    return row && fromRow(row);
  }

  async setArchivedUntil(id: string, at: Date): Promise<void> {
    await this.db('databases').where({ id }).update({ archived_until: at });
  }

  async purgeDue(before: Date): Promise<DatabaseRecord[]> {
    const rows = (await this.db<DatabaseRow>('databases')
      .whereNotNull('deleted_at')
      .where('deleted_at', '<', before)
      .whereNull('backups_purged_at')
      .orderBy('deleted_at')) as DatabaseRow[];
    return rows.map(fromRow);
  }

  async markPurged(id: string): Promise<void> {
    await this.db('backups').where({ database_id: id }).delete();
    await this.db('backup_schedules').where({ database_id: id }).delete();
    await this.db('databases').where({ id }).update({ backups_purged_at: this.db.fn.now() });
  }

  async restoringFrom(sourceId: string): Promise<DatabaseRecord[]> {
    const rows = (await this.live().where({ status: 'creating' }).whereRaw("restore_source->>'databaseId' = ?", [sourceId])) as DatabaseRow[];
    return rows.map(fromRow);
  }

  private backupRows() {
    return this.db<BackupRow>('backups');
  }

  /** Started backups not being deleted: the ones clients see. */
  private shownBackups(databaseId: string) {
    return this.backupRows().where({ database_id: databaseId, started: true }).whereNull('deleting_since');
  }

  private async oneBackup(q: Knex.QueryBuilder): Promise<BackupRecord | undefined> {
    const [row] = (await q.returning('*')) as BackupRow[];
    return row && backupFromRow(row);
  }

  async insertBackup(databaseId: string, name: string, method: BackupMethod): Promise<BackupRecord> {
    try {
      return (await this.oneBackup(this.backupRows().insert({ database_id: databaseId, name, method, status: 'running' })))!;
    } catch (err) {
      translatePgError(err, { unique: `the database already has a backup named ${name}` });
    }
  }

  async markBackupStarted(id: string): Promise<BackupRecord> {
    const b = await this.oneBackup(this.backupRows().where({ id }).update({ started: true }));
    if (!b) throw new Error(`backup ${id} vanished while it was started`);
    return b;
  }

  async deleteBackupRow(id: string): Promise<boolean> {
    return (await this.backupRows().where({ id }).delete()) > 0;
  }

  async backups(databaseId: string): Promise<BackupRecord[]> {
    const rows = (await this.shownBackups(databaseId).orderBy([
      { column: 'started_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])) as BackupRow[];
    return rows.map(backupFromRow);
  }

  async backupPage(databaseId: string, page: PageRequest): Promise<Page<BackupRecord>> {
    return mapPage(await keysetPage<BackupRow>(this.shownBackups(databaseId), page, { createdAt: 'started_at', order: 'desc' }), backupFromRow);
  }

  async backupByName(databaseId: string, name: string): Promise<BackupRecord | undefined> {
    const row = (await this.backupRows().where({ database_id: databaseId, name }).first()) as BackupRow | undefined;
    return row && backupFromRow(row);
  }

  async adoptBackup(databaseId: string, b: AdoptedBackup): Promise<BackupRecord | undefined> {
    const [row] = (await this.backupRows()
      .insert({
        database_id: databaseId,
        name: b.name,
        method: b.method,
        status: b.status,
        size_bytes: b.sizeBytes,
        started_at: b.startedAt,
        completed_at: b.completedAt,
        error: b.error,
        ref: b.ref,
        started: true,
      })
      .onConflict(['database_id', 'name'])
      .ignore()
      .returning('*')) as BackupRow[];
    return row && backupFromRow(row);
  }

  async syncBackup(id: string, from: BackupStatus, sync: BackupSync): Promise<BackupRecord | undefined> {
    return this.oneBackup(
      this.backupRows().where({ id, status: from }).update({
        status: sync.status,
        size_bytes: sync.sizeBytes,
        completed_at: sync.completedAt,
        error: sync.error,
        ref: sync.ref,
      }),
    );
  }

  async beginBackupDelete(id: string): Promise<BackupRecord | undefined> {
    return this.oneBackup(this.backupRows().where({ id, started: true }).whereNull('deleting_since').update({ deleting_since: this.db.fn.now() }));
  }

  async cancelBackupDelete(id: string): Promise<void> {
    await this.backupRows().where({ id }).update({ deleting_since: null });
  }

  async pendingBackups(before: Date): Promise<BackupRecord[]> {
    const rows = (await this.backupRows().where({ started: false }).where('created_at', '<', before).orderBy('created_at')) as BackupRow[];
    return rows.map(backupFromRow);
  }

  async deletingBackups(before: Date): Promise<BackupRecord[]> {
    const rows = (await this.backupRows().where('deleting_since', '<', before).orderBy('deleting_since')) as BackupRow[];
    return rows.map(backupFromRow);
  }

  async databasesWithRunningBackups(): Promise<string[]> {
    const rows = (await this.db('backups as b')
      .join('databases as d', 'd.id', 'b.database_id')
      .whereNull('d.deleted_at')
      .where({ 'b.started': true, 'b.status': 'running' })
      .distinct('b.database_id')) as { database_id: string }[];
    return rows.map((r) => r.database_id);
  }

  async databasesOverRetention(): Promise<string[]> {
    const rows = (await this.db('backups as b')
      .join('backup_schedules as s', 's.database_id', 'b.database_id')
      .join('databases as d', 'd.id', 'b.database_id')
      .whereNull('d.deleted_at')
      .where({ 'b.started': true, 'b.status': 'completed', 'b.method': 'scheduled' })
      .whereNull('b.deleting_since')
      .groupBy('b.database_id', 's.retention_count')
      .havingRaw('count(*) > s.retention_count')
      .select('b.database_id')) as { database_id: string }[];
    return rows.map((r) => r.database_id);
  }

  async schedule(databaseId: string): Promise<BackupSchedule | undefined> {
    const row = (await this.db<ScheduleRow>('backup_schedules').where({ database_id: databaseId }).first()) as ScheduleRow | undefined;
    return row && scheduleFromRow(row);
  }

  async putSchedule(s: BackupSchedule): Promise<BackupSchedule> {
    const values = {
      database_id: s.databaseId,
      schedule: s.schedule,
      retention_count: s.retentionCount,
      enabled: s.enabled,
      next_run_at: s.nextRunAt,
      updated_at: this.db.fn.now(),
    };
    const [row] = (await this.db('backup_schedules').insert(values).onConflict('database_id').merge().returning('*')) as ScheduleRow[];
    return scheduleFromRow(row!);
  }

  async dueSchedules(now: Date): Promise<BackupSchedule[]> {
    const rows = (await this.db<ScheduleRow>('backup_schedules as s')
      .join('databases as d', 'd.id', 's.database_id')
      .where('s.enabled', true)
      .where('s.next_run_at', '<=', now)
      .where('d.provisioned', true)
      .whereNull('d.deleted_at')
      .orderBy('s.next_run_at')
      .select('s.*')) as ScheduleRow[];
    return rows.map(scheduleFromRow);
  }

  async setNextRun(databaseId: string, at: Date | null): Promise<void> {
    await this.db('backup_schedules').where({ database_id: databaseId }).update({ next_run_at: at });
  }

  async event(e: PierEvent): Promise<void> {
    await writeEvent(this.db, e);
  }
}
