// Service lifecycle: create, read (with live status), update, delete.
import { randomUUID } from 'node:crypto';
import { releaseHostnames } from '../hostnames/hostnames.ts';
import { ConflictError, UnavailableError, crashPoint, type PageRequest } from '@pier/kit';
import { WorkloadRejectedError } from '../cluster-port.ts';
import { events } from '../events.ts';
import { configFromCreate, configFromPatch, workloadChanged, type CreateServiceInput, type PatchServiceInput, type ServiceConfig } from './service-config.ts';
import type { Scope, Service } from '../records.ts';
import { refreshStatuses } from './status-refresh.ts';
import { rollout } from './rollouts.ts';
import { findMutable, findService, refOf, type ComputeContext } from '../context.ts';

export interface ListResult {
  items: Service[];
  nextCursor: string | null;
  clusterCalls: number;
}

/**
 * Create: the row is written unprovisioned (so a duplicate name is a 409 before the cluster
 * is touched), the cluster is asked, and only then does the service become visible. An
 * unreachable cluster removes the row again: 503 and no record.
 */
export async function createService(ctx: ComputeContext, scope: Scope, input: CreateServiceInput): Promise<Service> {
  const config = configFromCreate(input);
  const id = randomUUID();
  // Held from before the row exists, as the databases' create does: a sibling instance's
  // start-up pass settles every unprovisioned row it can lock, and must not take this
  // request's own row for a crash's.
  const created = await ctx.locks.run(id, async () => {
    const row = await ctx.store.insertService({ id, ...config, workspace_id: scope.workspaceId, vpc_id: scope.vpcId, status: 'creating' });
    try {
      try {
        await ctx.cluster.ensureVpc(scope);
      } catch (err) {
        // Not the workload's fault and nothing to record: the cluster could not give the VPC its network.
        if (err instanceof WorkloadRejectedError) throw new UnavailableError(`the cluster could not prepare the VPC: ${err.message}`, 'cluster_error');
        throw err;
      }
      if (config.image) {
        return (await rollout(ctx, row, { reason: 'create', image: config.image, config, env: [] })).service;
      }
      const service = await ctx.store.transaction(async (tx) => {
        const s = await tx.updateService(row.id, { provisioned: true, status: 'creating', status_message: 'waiting for a first deploy' });
        await tx.writeEvent(events.created(s));
        return s;
      });
      ctx.eventsWritten();
      return service;
    } catch (err) {
      await ctx.store.deleteUnprovisioned(row.id);
      // Whatever the cluster got before it failed is removed too, if it can be reached at all.
      await ctx.cluster.delete(refOf(row)).catch(() => undefined);
      throw err;
    }
  });
  // Its host routes (to a 503 until a replica runs) from the edge's next sync, started now.
  ctx.edge.syncer.poke();
  return created;
}

export async function getService(ctx: ComputeContext, scope: Scope, id: string): Promise<{ service: Service; clusterCalls: number }> {
  const s = await findService(ctx, scope, id);
  const { services, clusterCalls } = await refreshStatuses(ctx, scope, [s]);
  return { service: services[0]!, clusterCalls };
}

export async function listServices(ctx: ComputeContext, scope: Scope, page: PageRequest): Promise<ListResult> {
  const { items, nextCursor } = await ctx.store.listServices(scope.vpcId, page);
  const { services, clusterCalls } = await refreshStatuses(ctx, scope, items);
  return { items: services, nextCursor, clusterCalls };
}

/**
 * PATCH: a change that the running containers must see (anything but `image`) rolls the
 * current deployment out again with the new configuration; `image` alone only changes
 * the repository that a bare deploy tag goes on.
 */
export async function updateService(ctx: ComputeContext, scope: Scope, id: string, patch: PatchServiceInput): Promise<Service> {
  const found = await findMutable(ctx, scope, id);
  return ctx.locks.run(found.id, async () => {
    const current = await findMutable(ctx, scope, id);
    const next = configFromPatch(current, patch);
    const deployment = current.current_deployment_id
      ? (await ctx.store.deploymentsByIds([current.current_deployment_id])).get(current.current_deployment_id)
      : undefined;
    if (deployment && workloadChanged(current, next)) {
      const env = await ctx.store.listEnv(current.id);
      return (await rollout(ctx, current, { reason: 'config', image: deployment.image, config: next, env })).service;
    }
    return saveConfig(ctx, current, next);
  });
}

async function saveConfig(ctx: ComputeContext, current: Service, next: ServiceConfig): Promise<Service> {
  const changed = (Object.keys(next) as (keyof ServiceConfig)[]).filter((k) => JSON.stringify(current[k]) !== JSON.stringify(next[k]));
  if (changed.length === 0) return current;
  const service = await ctx.store.transaction(async (tx) => {
    const s = await tx.updateService(current.id, next);
    await tx.writeEvent(events.updated(s, changed));
    return s;
  });
  ctx.eventsWritten();
  return service;
}

/**
 * Delete: `deleting` once the cluster answers (unreachable: 503, nothing changed), then
 * the teardown runs in the background and ends in the soft-deleted `deleted`. A teardown
 * interrupted by a crash is picked up again by the reconciler.
 */
export async function deleteService(ctx: ComputeContext, scope: Scope, id: string): Promise<Service> {
  const found = await findService(ctx, scope, id);
  if (found.deleted_at) throw new ConflictError('service is already deleted', 'service_deleted');
  if (found.status === 'deleting') return found;
  await ctx.cluster.ping();
  const service = await ctx.locks.run(found.id, async () => {
    const s = await ctx.store.transaction(async (tx) => {
      const before = await tx.lockService(found.id);
      if (!before || before.deleted_at) throw new ConflictError('service is already deleted', 'service_deleted');
      if (before.status === 'deleting') return before;
      const after = await tx.updateService(found.id, { status: 'deleting', status_message: null });
      await tx.writeEvent(events.statusChanged(after, before.status, 'deleting', null));
      return after;
    });
    ctx.eventsWritten();
    return s;
  });
  void teardown(ctx, service).catch((err) => ctx.log.warn({ err: String(err), service: service.id }, 'teardown failed; the reconciler retries it'));
  return service;
}

/** Removes the service's workload from the cluster, then soft-deletes the row. Idempotent. */
export async function teardown(ctx: ComputeContext, service: Service): Promise<void> {
  await ctx.locks.run(service.id, async () => {
    // Off the edge first (it is `deleting`, so out of the routing table), certificates with it.
    await releaseHostnames(ctx, service);
    await ctx.cluster.delete(refOf(service));
    // Gone from the cluster, the record still `deleting`: the reconciler's next pass finishes it.
    crashPoint('compute.teardown.deleted');
    await ctx.store.transaction(async (tx) => {
      const before = await tx.lockService(service.id);
      if (!before || before.deleted_at) return;
      await tx.supersedeRollouts(service.id, '00000000-0000-0000-0000-000000000000');
      const after = await tx.updateService(service.id, { status: 'deleted', status_message: null, deleted_at: ctx.now() });
      await tx.writeEvent(events.statusChanged(after, before.status, 'deleted', null));
      await tx.writeEvent(events.deleted(after));
    });
    ctx.eventsWritten();
  });
}

/** Live services of a VPC, for auth's refusal to delete a VPC that still holds some. */
export function countServices(ctx: ComputeContext, vpcId: string): Promise<number> {
  return ctx.store.countServices(vpcId);
}
