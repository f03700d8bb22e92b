// Every read asks the cluster: one batched observation per VPC, then what changed is
// stored (with its event) and the cluster's truth returned.
import type { DeploymentHead, Scope, Service } from '../records.ts';
import { liveStatus, type LiveStatus } from './status.ts';
import { events } from '../events.ts';
import { deploymentState, targetOf, type ComputeContext } from '../context.ts';

export interface Refreshed {
  services: Service[];
  /** Cluster API requests the read made. */
  clusterCalls: number;
}

/**
 * Resyncs `services` (all of one VPC) with the cluster and returns them as they now stand.
 * `known`: their current deployments, when the caller read them already (a sweep reads every
 * VPC's at once).
 */
export async function refreshStatuses(ctx: ComputeContext, scope: Scope, services: Service[], known?: Map<string, DeploymentHead>): Promise<Refreshed> {
  // A restore stops the replicas on purpose: its status is the restore's to set (disk-backups/disk-restore.ts).
  const live = services.filter((s) => !s.deleted_at && s.status !== 'deleting' && s.status !== 'restoring');
  if (live.length === 0) return { services, clusterCalls: 0 };
  const deployments = known ?? (await ctx.store.deploymentHeadsByIds(currentDeploymentIds(live)));
  const { observations, calls } = await ctx.cluster.observeMany(
    scope,
    live.map((s) => targetOf(s, s.current_deployment_id ? deployments.get(s.current_deployment_id) : undefined)),
  );

  // What each read found ready goes out with the service (replicas.ready), stored or not.
  const ready = (s: Service): Service => {
    const obs = observations.get(s.id);
    return obs ? { ...s, ready_replicas: obs.readyReplicas } : s;
  };
  const now = ctx.now();
  const changes: { service: Service; deployment: DeploymentHead | undefined; next: LiveStatus }[] = [];
  for (const s of live) {
    const obs = observations.get(s.id);
    if (!obs) continue;
    const d = s.current_deployment_id ? deployments.get(s.current_deployment_id) : undefined;
    const next = liveStatus(s.status, deploymentState(d), obs, now);
    if (next.status !== s.status || next.message !== s.status_message || next.deployment) changes.push({ service: s, deployment: d, next });
  }
  if (changes.length === 0) return { services: services.map(ready), clusterCalls: calls };

  const updated = new Map<string, Service>();
  // Rows are locked service first, then its deployment, in id order: the order a rollout's
  // commit takes them (commitRollout). Settling the deployment first deadlocked against a
  // rollout committed at that moment (seen in CI: an env change right after a create).
  changes.sort((a, b) => (a.service.id < b.service.id ? -1 : 1));
  await ctx.store.transaction(async (tx) => {
    for (const { service: s, deployment: d, next } of changes) {
      await tx.lockService(s.id);
      if (next.deployment && d && (await tx.settleDeployment(d.id, next.deployment.status, next.deployment.message))) {
        await tx.writeEvent(events.deploymentFinished(s, d.id, next.deployment.status, next.deployment.message));
      }
      // Only the writer that still sees the old status moves it, so concurrent reads emit one event.
      if (await tx.compareAndSetStatus(s.id, s.status, next.status, next.message)) {
        const after = { ...s, status: next.status, status_message: next.message };
        updated.set(s.id, after);
        if (next.status !== s.status) await tx.writeEvent(events.statusChanged(after, s.status, next.status, next.message));
      }
    }
  });
  ctx.eventsWritten();
  return { services: services.map((s) => ready(updated.get(s.id) ?? s)), clusterCalls: calls };
}

export function currentDeploymentIds(services: Service[]): string[] {
  return services.map((s) => s.current_deployment_id).filter((id): id is string => id !== null);
}
