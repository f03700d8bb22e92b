// Restoring a disk backup (the spec's rule 6): the service is scaled down, its disk replaced
// by the backup's contents and scaled up again; it reads `restoring` meanwhile, and is
// unavailable for the duration.
//
// The contents go into a *new* volume (docker) or claim (kubernetes), never over the disk in
// use: until the new one is complete the old one is untouched, so a restore that cannot be
// done (an archive missing from the store, a snapshot that cannot be read) is undone by
// starting the replicas on the old disk again. Then, in steps a crash can stop between:
//
//   preparing  the restore's record, the service `restoring` (with its event), the 202;
//              replicas stopped, the new volume filled (prepareRestore, idempotent)
//   switched   the service's disk is the new volume (services.disk_volume, one transaction
//              with the step); the workload applied on it; the old volume removed
//   done       the service's status from its replicas (running, or crashed with why), the
//              restore `completed` with `service.backup.restored`
//
// The work holds the service's lock throughout (other changes answer 409 `service_restoring`;
// a delete waits for it). A restore cut short is resumed from its step by the scheduler's
// pass, at start-up and after; one whose cluster is out of reach waits for it, `restoring`.
import { randomUUID } from 'node:crypto';
import { UnavailableError, crashPoint, type Logger } from '@pier/kit';
import { scopeOf, specOf, targetOf, type ComputeContext } from '../context.ts';
import { events } from '../events.ts';
import { refreshStatuses } from '../services/status-refresh.ts';
import type { Deployment, Scope, Service } from '../records.ts';
import type { ServiceStatus } from '../services/status.ts';
import { PROGRESS_DEADLINE_MS } from '../services/status.ts';
import type { DiskRestore } from './disk-backup-store-port.ts';
import { completedBackup, diskOf, isTransient, refuseBusy, serviceWithDisk } from './disk-backups.ts';

export interface RestoreResult {
  service: Service;
  restore: DiskRestore;
}

/** POST backups/restore: marked at once (the service `restoring`); the restore runs after the request. */
export async function restoreBackup(ctx: ComputeContext, scope: Scope, id: string, backupId: string): Promise<RestoreResult> {
  const found = await serviceWithDisk(ctx, scope, id);
  // Refused at once rather than after waiting for the lock a restore holds throughout.
  await refuseBusy(ctx, found);
  const result = await ctx.locks.run(found.id, async () => {
    const s = await serviceWithDisk(ctx, scope, id);
    const backup = await completedBackup(ctx, s, backupId);
    await refuseBusy(ctx, s);
    const restoreId = randomUUID();
    const to = ctx.disks.port.restoreVolume(diskOf(s), restoreId);
    return ctx.disks.store.transaction(async (tx) => {
      const before = (await tx.services.lockService(s.id))!;
      const restore = await tx.insertRestore({ id: restoreId, service_id: s.id, backup_id: backup.id, from_volume: s.disk_volume ?? null, to_volume: to });
      const message = `restoring the disk from backup ${backup.id} of ${new Date(backup.created_at).toISOString()}; the service is unavailable until it is done`;
      const service = await tx.services.updateService(s.id, { status: 'restoring', status_message: message });
      await tx.writeEvent(events.statusChanged(service, before.status, 'restoring', message));
      await tx.writeEvent(events.diskRestore(service, restore));
      return { service, restore };
    });
  });
  ctx.eventsWritten();
  void ctx.disks.jobs.run(result.restore.id, (signal) => runRestore(ctx, result.restore.id, signal));
  return result;
}

/** Restores a crash or an unreachable cluster left running, unless this process runs them already. */
export async function resumeRestores(ctx: ComputeContext, log: Logger): Promise<void> {
  for (const r of await ctx.disks.store.runningRestores()) {
    if (ctx.disks.jobs.has(r.id)) continue;
    log.info({ restore: r.id, service: r.service_id, step: r.step }, 'resuming a disk restore');
    void ctx.disks.jobs.run(r.id, (signal) => runRestore(ctx, r.id, signal));
  }
}

/** A restore from its recorded step to its end. A transient failure leaves it running, for the next pass. */
export async function runRestore(ctx: ComputeContext, restoreId: string, signal: AbortSignal): Promise<void> {
  const first = await ctx.disks.store.restoreById(restoreId);
  if (first?.status !== 'running') return;
  let settled: Service | undefined;
  try {
    settled = await ctx.locks.run(first.service_id, () => restoreSteps(ctx, restoreId, signal));
  } catch (err) {
    // Every step is idempotent: whatever stopped this one, the next pass goes on from the recorded step.
    ctx.log.warn({ err: String(err), restore: restoreId }, 'disk restore interrupted; resumed at the next pass');
    return;
  }
  // The status from a fresh observation, with whatever a rollout in progress needs settled.
  if (settled && !settled.deleted_at && settled.status !== 'deleting') await refreshStatuses(ctx, scopeOf(settled), [settled]).catch(() => undefined);
}

async function restoreSteps(ctx: ComputeContext, restoreId: string, signal: AbortSignal): Promise<Service | undefined> {
  const { store, port } = ctx.disks;
  const r = await store.restoreById(restoreId);
  if (r?.status !== 'running') return undefined;
  let s = (await ctx.store.serviceById(r.service_id))!;
  const deployment = s.current_deployment_id ? (await ctx.store.deploymentsByIds([s.current_deployment_id])).get(s.current_deployment_id) : undefined;
  if (s.deleted_at || s.status === 'deleting' || s.disk_size_gb === null || !deployment) {
    // Nothing left to restore into: the teardown removes the volumes.
    await port.removeVolume(diskOf(s), r.to_volume);
    return finish(ctx, s, r, { status: s.status, message: s.status_message }, 'the service was deleted, or lost its disk, during the restore');
  }
  if (r.step === 'preparing') {
    try {
      await port.prepareRestore(specOf(s, deployment), diskOf(s), r.backup_id, r.to_volume, signal);
    } catch (err) {
      if (isTransient(err, signal)) throw err;
      return undo(ctx, s, deployment, r, err instanceof Error ? err.message : String(err), signal);
    }
    crashPoint('compute.restore.prepared');
    s = await store.transaction(async (tx) => {
      await tx.updateRestore(r.id, { step: 'switched' });
      return tx.services.updateService(s.id, { disk_volume: r.to_volume });
    });
  }
  const outcome = await startReplicas(ctx, s, deployment, signal);
  crashPoint('compute.restore.started');
  // The old disk's contents are what the restore replaced.
  await port.removeVolume(diskOf(s), r.from_volume);
  return finish(ctx, s, r, outcome, null);
}

/** The prepared volume cannot be had: it goes, and the replicas start again on the disk they had. */
async function undo(ctx: ComputeContext, s: Service, d: Deployment, r: DiskRestore, reason: string, signal: AbortSignal): Promise<Service> {
  await ctx.disks.port.removeVolume(diskOf(s), r.to_volume);
  const outcome = await startReplicas(ctx, s, d, signal);
  ctx.log.warn({ restore: r.id, service: s.id, reason }, 'disk restore failed; the service keeps its disk');
  return finish(ctx, s, r, outcome, `${reason}; the service kept its disk as it was`);
}

interface Outcome {
  status: ServiceStatus;
  message: string | null;
}

/**
 * Applies the service's current deployment on its disk (apply is idempotent: a resumed restore
 * applies again) and waits, up to the rollout deadline, for its replicas to be ready. A
 * workload the cluster refuses ends the wait at once, `crashed` with the reason.
 */
async function startReplicas(ctx: ComputeContext, s: Service, d: Deployment, signal: AbortSignal): Promise<Outcome> {
  try {
    await ctx.cluster.apply(specOf(s, d));
  } catch (err) {
    if (isTransient(err, signal)) throw err;
    return { status: 'crashed', message: err instanceof Error ? err.message : String(err) };
  }
  const deadline = Date.now() + PROGRESS_DEADLINE_MS;
  let last: string | null = null;
  while (Date.now() < deadline) {
    if (signal.aborted) throw new UnavailableError('compute is stopping', 'stopping');
    const { observations } = await ctx.cluster.observeMany(scopeOf(s), [targetOf(s, d)]);
    const obs = observations.get(s.id);
    if (obs?.phase === 'ready') return { status: 'running', message: null };
    if (obs?.phase === 'scaled') return { status: 'scaled', message: null };
    if (obs?.phase === 'failed') return { status: 'crashed', message: obs.message };
    last = obs?.message ?? last;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  return { status: 'crashed', message: `replicas did not become ready within ${PROGRESS_DEADLINE_MS / 1000}s of the restore${last ? `: ${last}` : ''}` };
}

/** The restore's end, in one transaction: its record, the service's status, their events. */
async function finish(ctx: ComputeContext, s: Service, r: DiskRestore, outcome: Outcome, error: string | null): Promise<Service> {
  const service = await ctx.disks.store.transaction(async (tx) => {
    const before = (await tx.services.lockService(s.id))!;
    const restore = await tx.updateRestore(r.id, { status: error === null ? 'completed' : 'failed', error, finished_at: ctx.now() });
    let after = before;
    if (before.status === 'restoring') {
      after = await tx.services.updateService(s.id, { status: outcome.status, status_message: outcome.message });
      await tx.writeEvent(events.statusChanged(after, 'restoring', outcome.status, outcome.message));
    }
    await tx.writeEvent(events.diskRestore(after, restore));
    return after;
  });
  ctx.eventsWritten();
  return service;
}
