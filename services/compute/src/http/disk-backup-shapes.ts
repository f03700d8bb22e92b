// The JSON of disk backups, their restores and schedule, and the schemas that document it in OpenAPI.
import { z } from 'zod';
import { DISK_BACKUP_METHODS, DISK_BACKUP_STATUSES, DISK_RESTORE_STATUSES } from '../domain/disk-backups/disk-backup-store-port.ts';
import type { DiskBackup, DiskBackupSchedule, DiskRestore } from '../domain/disk-backups/disk-backup-store-port.ts';
import { serviceSchema } from './shapes.ts';

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

export const diskBackupSchema = z.object({
  id: z.string(),
  service_id: z.string(),
  status: z.enum(DISK_BACKUP_STATUSES),
  method: z.enum(DISK_BACKUP_METHODS),
  size_bytes: z.number().nullable().describe('docker: the compressed archive; kubernetes: the snapshot’s restoreSize. Set once completed'),
  created_at: z.string(),
  completed_at: z.string().nullable().describe('When it completed or failed'),
  error: z.string().nullable().describe('Why it failed'),
});

export const diskRestoreSchema = z.object({
  id: z.string(),
  backup_id: z.string(),
  status: z.enum(DISK_RESTORE_STATUSES),
  error: z.string().nullable().describe('Why it failed (the service then kept its disk as it was)'),
  created_at: z.string(),
  finished_at: z.string().nullable(),
});

export const diskBackupScheduleSchema = z.object({
  service_id: z.string(),
  schedule: z.string().describe('Five-field cron (or a macro such as @daily), UTC'),
  retention_count: z.number().describe('Completed scheduled backups kept; older ones are deleted'),
  next_run_at: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const diskBackupListSchema = z.object({
  items: z.array(diskBackupSchema),
  next_cursor: z.string().nullable(),
  restore: diskRestoreSchema.nullable().describe("The service's latest restore, running or finished (null: never restored)"),
  schedule: diskBackupScheduleSchema.nullable().describe('The backup schedule (null: none)'),
});

export const diskRestoreResultSchema = z.object({ service: serviceSchema, restore: diskRestoreSchema });

export function diskBackupJson(b: DiskBackup): z.infer<typeof diskBackupSchema> {
  return {
    id: b.id,
    service_id: b.service_id,
    status: b.status,
    method: b.method,
    size_bytes: b.size_bytes,
    created_at: iso(b.created_at)!,
    completed_at: iso(b.completed_at),
    error: b.error,
  };
}

export function diskRestoreJson(r: DiskRestore): z.infer<typeof diskRestoreSchema> {
  return { id: r.id, backup_id: r.backup_id, status: r.status, error: r.error, created_at: iso(r.created_at)!, finished_at: iso(r.finished_at) };
}

export function diskBackupScheduleJson(s: DiskBackupSchedule): z.infer<typeof diskBackupScheduleSchema> {
  return {
    service_id: s.service_id,
    schedule: s.schedule,
    retention_count: s.retention_count,
    next_run_at: iso(s.next_run_at)!,
    created_at: iso(s.created_at)!,
    updated_at: iso(s.updated_at)!,
  };
}
