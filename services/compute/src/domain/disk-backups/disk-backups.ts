// Disk backups of a service with a persistent disk, taken on request (`manual`) or by its
// schedule (`scheduled`); one backup or restore at a time per service.
//
// A backup is written `running` with its event, and the copy goes on after the request
// (DiskJobs): first the consistent capture under the service's lock (docker pauses the
// replicas for it), then the rest without the lock (the upload, or the snapshot becoming
// ready), and the record ends `completed` or `failed` with its event. A backup a crash cut
// short is followed again where the cluster goes on with it (kubernetes); elsewhere what it
// left is removed and it reads `failed` with the reason (recoverBackups, at start-up).
import { ConflictError, NotFoundError, UnavailableError, crashPoint, isUuid, type Page, type PageRequest } from '@pier/kit';
import { findService, refOf, serviceNotFound, type ComputeContext } from '../context.ts';
import { events } from '../events.ts';
import type { Scope, Service } from '../records.ts';
import { DiskBackupFailedError, type DiskRef } from './disk-backup-port.ts';
import type { DiskBackup, DiskBackupMethod, DiskBackupSchedule, DiskRestore } from './disk-backup-store-port.ts';

export const backupNotFound = () => new NotFoundError("backup not found among this service's backups", 'backup_not_found');

/** The service's disk as the cluster side names it. */
export function diskOf(s: Service): DiskRef {
  return { ...refOf(s), volume: s.disk_volume ?? null };
}

/** A service of this scope not deleted (404) nor being deleted (409 `service_deleting`); a restoring one too. */
export async function liveService(ctx: ComputeContext, scope: Scope, id: string): Promise<Service> {
  const s = await findService(ctx, scope, id);
  if (s.deleted_at) throw serviceNotFound();
  if (s.status === 'deleting') throw new ConflictError('service is being deleted', 'service_deleting');
  return s;
}

/** A live service of this scope that has a disk (409 `no_disk` otherwise). */
export async function serviceWithDisk(ctx: ComputeContext, scope: Scope, id: string): Promise<Service> {
  const s = await liveService(ctx, scope, id);
  if (s.disk_size_gb === null) {
    throw new ConflictError(`service ${s.name} has no disk (disk_size_gb): backups apply to services with a persistent volume`, 'no_disk');
  }
  return s;
}

/** One backup or restore at a time, and a disk exists only once the service was deployed (409s). */
export async function refuseBusy(ctx: ComputeContext, s: Service): Promise<void> {
  const restore = await ctx.disks.store.runningRestore(s.id);
  if (restore)
    throw new ConflictError(`the disk is being restored from backup ${restore.backup_id}; one backup or restore runs at a time`, 'restore_in_progress');
  const backup = await ctx.disks.store.runningBackup(s.id);
  if (backup) throw new ConflictError(`backup ${backup.id} is still running; one backup or restore runs at a time`, 'backup_in_progress');
  if (!s.current_deployment_id) throw new ConflictError('the service has not been deployed yet: its disk exists from its first deploy on', 'not_deployed');
}

export interface BackupsView {
  page: Page<DiskBackup>;
  /** The service's latest restore (how the last one went), if any. */
  restore: DiskRestore | undefined;
  schedule: DiskBackupSchedule | undefined;
}

export async function listBackups(ctx: ComputeContext, scope: Scope, id: string, page: PageRequest): Promise<BackupsView> {
  const s = await findService(ctx, scope, id);
  if (s.deleted_at) throw serviceNotFound();
  const { store } = ctx.disks;
  return { page: await store.listBackups(s.id, page), restore: await store.latestRestore(s.id), schedule: await store.schedule(s.id) };
}

/** POST backups: the record at once (`running`); the copy runs after the request. */
export async function takeBackup(ctx: ComputeContext, scope: Scope, id: string): Promise<DiskBackup> {
  const found = await serviceWithDisk(ctx, scope, id);
  // Refused at once rather than after waiting for the lock a restore holds throughout.
  await refuseBusy(ctx, found);
  const backup = await ctx.locks.run(found.id, async () => startBackup(ctx, await serviceWithDisk(ctx, scope, id), 'manual'));
  void ctx.disks.jobs.run(backup.id, (signal) => runBackup(ctx, backup.id, signal));
  return backup;
}

/** The `running` record and its event; the caller holds the service's lock and runs the copy (runBackup) once it let go. */
export async function startBackup(ctx: ComputeContext, s: Service, method: DiskBackupMethod): Promise<DiskBackup> {
  await refuseBusy(ctx, s);
  const backup = await ctx.disks.store.transaction(async (tx) => {
    const b = await tx.insertBackup(s.id, method);
    await tx.writeEvent(events.diskBackup(s, b));
    return b;
  });
  ctx.eventsWritten();
  return backup;
}

const failureOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * The copy of a running backup, to its end. On shutdown (`signal`), a copy the cluster goes
 * on with is left running (recovery follows it at the next start); any other ends `failed`.
 */
export async function runBackup(ctx: ComputeContext, backupId: string, signal: AbortSignal): Promise<void> {
  const { store, port } = ctx.disks;
  const first = await store.backupById(backupId);
  if (first?.status !== 'running') return;
  const service = await ctx.store.serviceById(first.service_id);
  if (!service) return;
  const disk = diskOf(service);
  try {
    await ctx.locks.run(service.id, async () => {
      const s = await ctx.store.serviceById(service.id);
      if (!s || s.deleted_at || s.status === 'deleting' || s.disk_size_gb === null) {
        throw new DiskBackupFailedError('the service was deleted, or lost its disk, before the copy started');
      }
      // A restore switched the disk meanwhile: the copy is of the disk as it is now.
      disk.volume = s.disk_volume ?? null;
      await port.capture(disk, backupId, signal);
    });
    crashPoint('compute.backup.captured');
    const { sizeBytes } = await port.complete(disk, backupId, signal);
    await settleBackup(ctx, service, backupId, { status: 'completed', size_bytes: sizeBytes });
  } catch (err) {
    if (signal.aborted && port.survivesRestart) return;
    const reason = signal.aborted ? 'compute stopped during the backup; take another' : failureOf(err);
    await port.abandon(disk, backupId).catch((e: unknown) => ctx.log.warn({ err: String(e), backup: backupId }, 'could not clean up after a failed backup'));
    await settleBackup(ctx, service, backupId, { status: 'failed', error: reason });
    ctx.log.warn({ backup: backupId, service: service.id, reason }, 'disk backup failed');
  }
}

async function settleBackup(
  ctx: ComputeContext,
  s: Service,
  backupId: string,
  outcome: { status: 'completed' | 'failed'; size_bytes?: number | null; error?: string | null },
): Promise<void> {
  await ctx.disks.store.transaction(async (tx) => {
    const b = await tx.settleBackup(backupId, outcome);
    if (b) await tx.writeEvent(events.diskBackup(s, b));
  });
  ctx.eventsWritten();
}

/**
 * How long a backup just recorded by another instance is left to it before recovery may take
 * it: that instance claims it (DiskJobs) right after the record commits, and from then on
 * the claim says whether anyone still runs it.
 */
const CLAIM_GRACE_MS = 30_000;

/**
 * Backups no process runs any more: left by a previous process (started before `startedAt`,
 * this one's start), or by another instance that stopped or died (its claim given back or
 * expired). Kubernetes goes on with a snapshot while compute is away, so it is followed
 * again; a docker copy died with its container, so what it left goes (paused replicas run
 * again) and it reads `failed`. A backup another instance is running holds its claim and
 * is left alone. Idempotent: run at start-up and at every scheduler pass.
 */
export async function recoverBackups(ctx: ComputeContext, startedAt: Date): Promise<void> {
  const { store, port, jobs } = ctx.disks;
  const now = ctx.now().getTime();
  for (const b of await store.runningBackups()) {
    const created = new Date(b.created_at);
    if (jobs.has(b.id) || (created >= startedAt && now - created.getTime() < CLAIM_GRACE_MS)) continue;
    if (port.survivesRestart) {
      void jobs.run(b.id, (signal) => runBackup(ctx, b.id, signal));
      continue;
    }
    await jobs.run(b.id, () => abandonBackup(ctx, b.id));
  }
}

/** A docker backup no process runs: what it left goes, and it reads `failed`. */
async function abandonBackup(ctx: ComputeContext, backupId: string): Promise<void> {
  const b = await ctx.disks.store.backupById(backupId);
  const service = b?.status === 'running' ? await ctx.store.serviceById(b.service_id) : undefined;
  if (!service) return;
  await ctx.locks.run(service.id, async () => {
    await ctx.disks.port.abandon(diskOf(service), backupId);
    await settleBackup(ctx, service, backupId, { status: 'failed', error: 'compute restarted during the backup; take another' });
  });
  ctx.log.info({ backup: backupId, service: service.id }, 'failed a disk backup a restart interrupted');
}

/** Deletes a finished backup from the store, then its record with its event. */
export async function removeBackup(ctx: ComputeContext, b: DiskBackup, reason: 'retention' | 'service_deleted'): Promise<void> {
  const service = await ctx.store.serviceById(b.service_id);
  if (!service) return;
  await ctx.disks.port.remove(diskOf(service), b.id);
  await ctx.disks.store.transaction(async (tx) => {
    if (await tx.deleteBackup(b.id)) await tx.writeEvent(events.diskBackupDeleted(service, b, reason));
  });
  ctx.eventsWritten();
}

/** A backup id of this service's history, completed (404 `backup_not_found`, 409 `backup_not_completed`). */
export async function completedBackup(ctx: ComputeContext, s: Service, backupId: string): Promise<DiskBackup> {
  const b = isUuid(backupId) ? await ctx.disks.store.findBackup(s.id, backupId.toLowerCase()) : undefined;
  if (!b) throw backupNotFound();
  if (b.status !== 'completed') {
    throw new ConflictError(`backup ${b.id} is ${b.status}${b.error ? ` (${b.error})` : ''}: only a completed backup can be restored`, 'backup_not_completed');
  }
  return b;
}

/** Whether a failure is worth trying again later rather than the end of the operation. */
export function isTransient(err: unknown, signal: AbortSignal): boolean {
  return signal.aborted || err instanceof UnavailableError;
}
