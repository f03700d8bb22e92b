// What disk backups need from compute's schema: the backup records, the restores (a record
// each, so a restore a crash cut short is finished or undone), and the schedules. The domain
// defines it; store/disk-backup-store.ts implements it with knex. A transaction is the same
// interface bound to one connection, with the services' store on that connection too.
import type { Page, PageRequest, PierEvent } from '@pier/kit';
import type { ComputeStore } from '../store-port.ts';

export const DISK_BACKUP_STATUSES = ['running', 'completed', 'failed'] as const;
export type DiskBackupStatus = (typeof DISK_BACKUP_STATUSES)[number];

export const DISK_BACKUP_METHODS = ['manual', 'scheduled'] as const;
export type DiskBackupMethod = (typeof DISK_BACKUP_METHODS)[number];

export interface DiskBackup {
  id: string;
  service_id: string;
  status: DiskBackupStatus;
  method: DiskBackupMethod;
  /** docker: the compressed archive's bytes; kubernetes: the snapshot's restoreSize. Null until it completed. */
  size_bytes: number | null;
  error: string | null;
  created_at: Date;
  completed_at: Date | null;
}

export const DISK_RESTORE_STATUSES = ['running', 'completed', 'failed'] as const;
export type DiskRestoreStatus = (typeof DISK_RESTORE_STATUSES)[number];

/**
 * `preparing`: the replicas are stopped and the new volume filled from the backup (undone on
 * failure: the service keeps its disk); `switched`: the service's disk is the new volume, its
 * replicas are started on it and the old volume goes.
 */
export type DiskRestoreStep = 'preparing' | 'switched';

export interface DiskRestore {
  id: string;
  service_id: string;
  backup_id: string;
  status: DiskRestoreStatus;
  step: DiskRestoreStep;
  /** The volume (docker) or claim (kubernetes) the service had; null: the one it was created with. */
  from_volume: string | null;
  /** The volume the backup is restored into, which becomes the service's disk. */
  to_volume: string;
  error: string | null;
  created_at: Date;
  finished_at: Date | null;
}

export interface DiskBackupSchedule {
  service_id: string;
  /** Five fields (or a macro), UTC. */
  schedule: string;
  /** Completed scheduled backups kept; older ones are deleted. */
  retention_count: number;
  next_run_at: Date;
  created_at: Date;
  updated_at: Date;
}

export interface DiskBackupStore {
  transaction<T>(fn: (tx: DiskBackupStore) => Promise<T>): Promise<T>;
  /** The services' store, on this store's connection (inside a transaction: the same one). */
  readonly services: ComputeStore;
  writeEvent(event: PierEvent): Promise<void>;

  /** A `running` backup; another running backup of the service: ConflictError. */
  insertBackup(serviceId: string, method: DiskBackupMethod): Promise<DiskBackup>;
  findBackup(serviceId: string, id: string): Promise<DiskBackup | undefined>;
  backupById(id: string): Promise<DiskBackup | undefined>;
  /** Newest first. */
  listBackups(serviceId: string, page: PageRequest): Promise<Page<DiskBackup>>;
  runningBackup(serviceId: string): Promise<DiskBackup | undefined>;
  /** Every running backup (recovery's view). */
  runningBackups(): Promise<DiskBackup[]>;
  /** Records the end of a backup still running; undefined when it had already ended. */
  settleBackup(id: string, outcome: { status: 'completed' | 'failed'; size_bytes?: number | null; error?: string | null }): Promise<DiskBackup | undefined>;
  deleteBackup(id: string): Promise<boolean>;
  /** Completed scheduled backups past their service's retention_count, oldest first. */
  backupsBeyondRetention(): Promise<DiskBackup[]>;
  /** Finished backups of deleted services (their store objects go with them). */
  backupsOfDeletedServices(limit: number): Promise<DiskBackup[]>;

  /** A `running` restore at step `preparing`; another running restore of the service: ConflictError. */
  insertRestore(row: Pick<DiskRestore, 'service_id' | 'backup_id' | 'from_volume'> & { id: string; to_volume: string }): Promise<DiskRestore>;
  updateRestore(id: string, patch: Partial<Pick<DiskRestore, 'status' | 'step' | 'error' | 'finished_at'>>): Promise<DiskRestore>;
  restoreById(id: string): Promise<DiskRestore | undefined>;
  runningRestore(serviceId: string): Promise<DiskRestore | undefined>;
  runningRestores(): Promise<DiskRestore[]>;
  /** The service's latest restore, whatever its state. */
  latestRestore(serviceId: string): Promise<DiskRestore | undefined>;

  schedule(serviceId: string): Promise<DiskBackupSchedule | undefined>;
  putSchedule(row: Pick<DiskBackupSchedule, 'service_id' | 'schedule' | 'retention_count' | 'next_run_at'>): Promise<DiskBackupSchedule>;
  deleteSchedule(serviceId: string): Promise<boolean>;
  dueSchedules(now: Date): Promise<DiskBackupSchedule[]>;
  setNextRun(serviceId: string, at: Date): Promise<void>;
  /** A deleted service's schedule goes with it; the count removed. */
  dropSchedulesOfDeletedServices(): Promise<number>;
}
