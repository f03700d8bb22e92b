import { ConflictError, NotFoundError, isUuid, resourcesOf } from '@pier/kit';
import type { ClusterPort, ObserveTarget, WorkloadRef, WorkloadSpec } from './cluster-port.ts';
import type { SecretsPort } from './env/secrets-port.ts';
import type { BuildDeps } from './builds/build-deps.ts';
import type { ShellPort } from './exec/shell-port.ts';
import type { LogDeps } from './logs/log-deps.ts';
import type { EdgeDeps } from './edge/edge-deps.ts';
import type { UptimeDeps } from './uptime/uptime-deps.ts';
import type { DiskBackupDeps } from './disk-backups/disk-backup-deps.ts';
import type { ElasticPort } from './elastic/elastic-port.ts';
import type { MetricsDeps } from './metrics/metrics-deps.ts';
import type { ComputeStore } from './store-port.ts';
import type { Deployment, DeploymentHead, Scope, Service } from './records.ts';
import type { EnvEntry } from './env/env-input.ts';
import type { KeyedMutex, Logger } from '@pier/kit';
import type { DeploymentState } from './services/status.ts';

/** What every use case works with. Built once in server.ts; no globals. */
export interface ComputeContext {
  store: ComputeStore;
  cluster: ClusterPort;
  secrets: SecretsPort;
  /** Shells in running replicas (exec). */
  shell: ShellPort;
  /** Service logs: where they are read, kept and fed to followers. */
  logs: LogDeps;
  /** Builds from git or an uploaded archive: their store, builder, limits and worker. */
  builds: BuildDeps;
  /** The edge: public URLs, custom domains and their certificates. */
  edge: EdgeDeps;
  /** Uptime monitoring: its store, the probe that reaches services as users do, its settings. */
  uptime: UptimeDeps;
  /** Disk backups: their records, the cluster's side, and the backups and restores running here. */
  disks: DiskBackupDeps;
  /** Service metrics: their store, the cluster's CPU and memory, the edge's requests. */
  metrics: MetricsDeps;
  /** Sleep, wake and autoscaling (docker with its edge); null where the cluster's own controllers do it. */
  elastic: ElasticPort | null;
  log: Logger;
  locks: KeyedMutex;
  /** Called after a commit that wrote events, so the relay publishes them now rather than at its next pass. */
  eventsWritten(): void;
  now(): Date;
}

export function scopeOf(s: Service): Scope {
  return { workspaceId: s.workspace_id, vpcId: s.vpc_id };
}

export function refOf(s: Service): WorkloadRef {
  return { workspaceId: s.workspace_id, vpcId: s.vpc_id, serviceId: s.id, serviceName: s.name };
}

export function specOf(s: Service, d: Pick<Deployment, 'id' | 'image' | 'config' | 'env'>): WorkloadSpec {
  return {
    ...refOf(s),
    deploymentId: d.id,
    image: d.image,
    config: d.config,
    resources: resourcesOf(d.config.instance_type),
    env: d.env as EnvEntry[],
    ...(s.disk_volume ? { diskVolume: s.disk_volume } : {}),
    ...(s.desired_replicas != null ? { replicas: s.desired_replicas } : {}),
  };
}

export function targetOf(s: Service, d: Pick<Deployment, 'id' | 'config'> | undefined): ObserveTarget {
  const config = d?.config ?? s;
  return {
    serviceId: s.id,
    serviceType: config.service_type,
    deploymentId: d?.id ?? null,
    replicas: s.desired_replicas ?? config.min_replicas,
    port: config.port,
    healthCheckPath: config.health_check_path,
  };
}

export function deploymentState(d: DeploymentHead | undefined): DeploymentState | null {
  if (!d) return null;
  return { id: d.id, status: d.status, reason: d.reason, applied: d.applied, message: d.message, createdAt: new Date(d.created_at) };
}

export function serviceNotFound(): NotFoundError {
  return new NotFoundError('service not found', 'service_not_found');
}

/** A service of this VPC (deleted ones included, for a final read of `deleted`). */
export async function findService(ctx: ComputeContext, scope: Scope, id: string): Promise<Service> {
  if (!isUuid(id)) throw serviceNotFound();
  const s = await ctx.store.findService(scope.vpcId, id.toLowerCase());
  if (!s || s.workspace_id !== scope.workspaceId) throw serviceNotFound();
  return s;
}

/** A service that can still be changed: not deleted (404), not being deleted (409). */
export async function findMutable(ctx: ComputeContext, scope: Scope, id: string): Promise<Service> {
  const s = await findService(ctx, scope, id);
  if (s.deleted_at) throw serviceNotFound();
  if (s.status === 'deleting') throw new ConflictError('service is being deleted', 'service_deleting');
  if (s.status === 'restoring') throw new ConflictError("the service's disk is being restored from a backup; retry once it is done", 'service_restoring');
  return s;
}
