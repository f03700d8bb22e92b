import { keysetPage, mapPage, translatePgError, writeEvent, type Knex, type Page, type PageRequest, type PgErrorMessages, type PierEvent } from '@pier/kit';
import type { DiskBackup, DiskBackupMethod, DiskBackupSchedule, DiskBackupStore, DiskRestore } from '../domain/disk-backups/disk-backup-store-port.ts';
import type { ComputeStore } from '../domain/store-port.ts';
import { KnexComputeStore } from './store.ts';

type Db = Knex | Knex.Transaction;

// bigint comes back from pg as text.
function backupRow(r: Record<string, unknown>): DiskBackup {
  return { ...(r as unknown as DiskBackup), size_bytes: r.size_bytes === null || r.size_bytes === undefined ? null : Number(r.size_bytes) };
}

const restoreRow = (r: Record<string, unknown>): DiskRestore => r as unknown as DiskRestore;
const scheduleRow = (r: Record<string, unknown>): DiskBackupSchedule => r as unknown as DiskBackupSchedule;

const BACKUP_COLUMNS = ['id', 'service_id', 'status', 'method', 'size_bytes', 'error', 'created_at', 'completed_at'];

/** The unique indexes allowing one running backup, and one running restore, per service: a second is the caller's 409. */
const ONE_RUNNING: PgErrorMessages = {
  constraints: {
    disk_backups_one_running: {
      message: 'another backup of this service is running; one backup or restore runs at a time',
      code: 'backup_in_progress',
    },
    disk_restores_one_running: { message: "the service's disk is being restored; one backup or restore runs at a time", code: 'restore_in_progress' },
  },
};

export class KnexDiskBackupStore implements DiskBackupStore {
  constructor(private readonly db: Db) {}

  transaction<T>(fn: (tx: DiskBackupStore) => Promise<T>): Promise<T> {
    return (this.db as Knex).transaction((trx) => fn(new KnexDiskBackupStore(trx)));
  }

  get services(): ComputeStore {
    return new KnexComputeStore(this.db);
  }

  writeEvent(event: PierEvent): Promise<void> {
    return writeEvent(this.db, event);
  }

  async insertBackup(serviceId: string, method: DiskBackupMethod): Promise<DiskBackup> {
    try {
      const [r] = await this.db('disk_backups').insert({ service_id: serviceId, method, status: 'running' }).returning(BACKUP_COLUMNS);
      return backupRow(r);
    } catch (err) {
      return translatePgError(err, ONE_RUNNING);
    }
  }

  async findBackup(serviceId: string, id: string): Promise<DiskBackup | undefined> {
    const r = await this.db('disk_backups').where({ id, service_id: serviceId }).first(BACKUP_COLUMNS);
    return r ? backupRow(r) : undefined;
  }

  async backupById(id: string): Promise<DiskBackup | undefined> {
    const r = await this.db('disk_backups').where({ id }).first(BACKUP_COLUMNS);
    return r ? backupRow(r) : undefined;
  }

  async listBackups(serviceId: string, page: PageRequest): Promise<Page<DiskBackup>> {
    const q = this.db('disk_backups').where({ service_id: serviceId }).select(BACKUP_COLUMNS);
    return mapPage(await keysetPage<Record<string, unknown>>(q, page, { order: 'desc' }), backupRow);
  }

  async runningBackup(serviceId: string): Promise<DiskBackup | undefined> {
    const r = await this.db('disk_backups').where({ service_id: serviceId, status: 'running' }).first(BACKUP_COLUMNS);
    return r ? backupRow(r) : undefined;
  }

  async runningBackups(): Promise<DiskBackup[]> {
    const rows = await this.db('disk_backups').where({ status: 'running' }).orderBy('created_at').select(BACKUP_COLUMNS);
    return rows.map(backupRow);
  }

  async settleBackup(
    id: string,
    outcome: { status: 'completed' | 'failed'; size_bytes?: number | null; error?: string | null },
  ): Promise<DiskBackup | undefined> {
    const [r] = await this.db('disk_backups')
      .where({ id, status: 'running' })
      .update({
        status: outcome.status,
        size_bytes: outcome.size_bytes ?? null,
        error: outcome.error ?? null,
        completed_at: this.db.fn.now(),
        updated_at: this.db.fn.now(),
      })
      .returning(BACKUP_COLUMNS);
    return r ? backupRow(r) : undefined;
  }

  async deleteBackup(id: string): Promise<boolean> {
    return (await this.db('disk_backups').where({ id }).delete()) > 0;
  }

  async backupsBeyondRetention(): Promise<DiskBackup[]> {
    // Newest first per service, numbered; a backup a running restore reads from is kept.
    const { rows } = await this.db.raw(
      `select ${BACKUP_COLUMNS.map((c) => `b.${c}`).join(', ')}
         from (select *, row_number() over (partition by service_id order by created_at desc, id desc) as n
                 from disk_backups where status = 'completed' and method = 'scheduled') b
         join disk_backup_schedules s on s.service_id = b.service_id
        where b.n > s.retention_count
          and not exists (select 1 from disk_restores r where r.backup_id = b.id and r.status = 'running')
        order by b.created_at, b.id`,
    );
    return (rows as Record<string, unknown>[]).map(backupRow);
  }

  async backupsOfDeletedServices(limit: number): Promise<DiskBackup[]> {
    const rows = await this.db('disk_backups as b')
      .join('services as s', 's.id', 'b.service_id')
      .whereNotNull('s.deleted_at')
      .whereNot('b.status', 'running')
      .orderBy('b.created_at')
      .limit(limit)
      .select(BACKUP_COLUMNS.map((c) => `b.${c}`));
    return rows.map(backupRow);
  }

  async insertRestore(row: Pick<DiskRestore, 'service_id' | 'backup_id' | 'from_volume'> & { id: string; to_volume: string }): Promise<DiskRestore> {
    try {
      const [r] = await this.db('disk_restores')
        .insert({ ...row, status: 'running', step: 'preparing' })
        .returning('*');
      return restoreRow(r);
    } catch (err) {
      return translatePgError(err, ONE_RUNNING);
    }
  }

  async updateRestore(id: string, patch: Partial<Pick<DiskRestore, 'status' | 'step' | 'error' | 'finished_at'>>): Promise<DiskRestore> {
    const [r] = await this.db('disk_restores')
      .where({ id })
      .update({ ...patch, updated_at: this.db.fn.now() })
      .returning('*');
    return restoreRow(r);
  }

  async restoreById(id: string): Promise<DiskRestore | undefined> {
    const r = await this.db('disk_restores').where({ id }).first();
    return r ? restoreRow(r) : undefined;
  }

  async runningRestore(serviceId: string): Promise<DiskRestore | undefined> {
    const r = await this.db('disk_restores').where({ service_id: serviceId, status: 'running' }).first();
    return r ? restoreRow(r) : undefined;
  }

  async runningRestores(): Promise<DiskRestore[]> {
    const rows = await this.db('disk_restores').where({ status: 'running' }).orderBy('created_at');
    return rows.map(restoreRow);
  }

  async latestRestore(serviceId: string): Promise<DiskRestore | undefined> {
    const r = await this.db('disk_restores')
      .where({ service_id: serviceId })
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .first();
    return r ? restoreRow(r) : undefined;
  }

  async schedule(serviceId: string): Promise<DiskBackupSchedule | undefined> {
    const r = await this.db('disk_backup_schedules').where({ service_id: serviceId }).first();
    return r ? scheduleRow(r) : undefined;
  }

  async putSchedule(row: Pick<DiskBackupSchedule, 'service_id' | 'schedule' | 'retention_count' | 'next_run_at'>): Promise<DiskBackupSchedule> {
    const [r] = await this.db('disk_backup_schedules')
      .insert(row)
      .onConflict('service_id')
      .merge({ schedule: row.schedule, retention_count: row.retention_count, next_run_at: row.next_run_at, updated_at: this.db.fn.now() })
      .returning('*');
    return scheduleRow(r);
  }

  async deleteSchedule(serviceId: string): Promise<boolean> {
    return (await this.db('disk_backup_schedules').where({ service_id: serviceId }).delete()) > 0;
  }

  async dueSchedules(now: Date): Promise<DiskBackupSchedule[]> {
    const rows = await this.db('disk_backup_schedules as d')
      .join('services as s', 's.id', 'd.service_id')
      .whereNull('s.deleted_at')
      .where('d.next_run_at', '<=', now)
      .orderBy('d.next_run_at')
      .select('d.*');
    return rows.map(scheduleRow);
  }

  async setNextRun(serviceId: string, at: Date): Promise<void> {
    await this.db('disk_backup_schedules').where({ service_id: serviceId }).update({ next_run_at: at, updated_at: this.db.fn.now() });
  }

  async dropSchedulesOfDeletedServices(): Promise<number> {
    return this.db('disk_backup_schedules').whereIn('service_id', this.db('services').whereNotNull('deleted_at').select('id')).delete();
  }
}
