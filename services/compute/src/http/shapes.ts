// The JSON compute answers with, and the zod schemas that document it in OpenAPI.
import { z } from 'zod';
import type { EdgeDeps } from '../domain/edge/edge-deps.ts';
import { serviceUrl } from '../domain/hostnames/hostname-format.ts';
import { DEPLOYMENT_MODES, SERVICE_TYPES } from '../domain/services/service-config.ts';
import { INSTANCE_TYPE_NAMES, resourcesOf } from '@pier/kit';
import { DEPLOYMENT_REASONS, DEPLOYMENT_STATUSES, SERVICE_STATUSES } from '../domain/services/status.ts';
import type { Deployment, EnvVar, Service } from '../domain/records.ts';
import type { LogLine } from '../domain/logs/log-port.ts';
import { microsOf } from '../domain/logs/log-time.ts';

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

export const serviceSchema = z.object({
  id: z.string(),
  workspace_id: z.string(),
  vpc_id: z.string(),
  name: z.string(),
  service_type: z.enum(SERVICE_TYPES),
  instance_type: z.enum(INSTANCE_TYPE_NAMES),
  resources: z.object({ cpu: z.number(), memory_mib: z.number() }).describe('What the instance type gives each replica'),
  deployment_mode: z.enum(DEPLOYMENT_MODES),
  image: z.string().nullable(),
  port: z.number().nullable(),
  health_check_path: z.string().nullable(),
  min_replicas: z.number(),
  max_replicas: z.number().nullable(),
  cron_schedule: z.string().nullable(),
  disk_size_gb: z.number().nullable(),
  disk_mount_path: z.string().nullable(),
  command: z.array(z.string()).nullable(),
  args: z.array(z.string()).nullable(),
  run_as_user: z.number(),
  idle_timeout_seconds: z
    .number()
    .nullable()
    .describe('on_demand: seconds with no request through the edge before the service sleeps (scales to zero); null for always_on'),
  target_concurrency: z
    .number()
    .nullable()
    .describe('web: requests in flight per replica the autoscaler aims at, between the floor and max_replicas; null for workers and cron jobs'),
  replicas: z
    .object({
      desired: z.number().describe('Replicas the service runs now: 0 while asleep, the autoscaler’s count, else min_replicas'),
      ready: z.number().describe('Replicas running and ready, live from the cluster'),
    })
    .describe('Live replica counts'),
  status: z.enum(SERVICE_STATUSES),
  status_message: z.string().nullable().describe('Why the service is crashed (or what it waits for)'),
  url: z
    .string()
    .nullable()
    .describe(
      'web services: the public URL, https://<name>-<short id>.<apps domain>, served by the edge (null for workers and cron jobs, or with the edge off)',
    ),
  current_deployment_id: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  deleted_at: z.string().nullable(),
});

export const deploymentSchema = z.object({
  id: z.string(),
  service_id: z.string(),
  image: z.string(),
  reason: z.enum(DEPLOYMENT_REASONS),
  rollback_of: z.string().nullable(),
  status: z.enum(DEPLOYMENT_STATUSES.filter((s) => s !== 'pending') as [string, ...string[]]),
  message: z.string().nullable().describe('Why it failed (for example a missing secret)'),
  created_at: z.string(),
  finished_at: z.string().nullable(),
});

export const envVarSchema = z.union([
  z.object({ id: z.string(), key: z.string(), value: z.string() }),
  z.object({ id: z.string(), key: z.string(), secret_id: z.string(), secret_key: z.string() }),
]);

export const rolloutSchema = z.object({ service: serviceSchema, deployment: deploymentSchema });
export const envSchema = z.object({ variables: z.array(envVarSchema), deployment: deploymentSchema.nullable().optional() });

/** `edge` gives the public URL: none when the edge is turned off. */
export function serviceJson(s: Service, edge: Pick<EdgeDeps, 'port' | 'settings'>): z.infer<typeof serviceSchema> {
  const r = resourcesOf(s.instance_type);
  return {
    id: s.id,
    workspace_id: s.workspace_id,
    vpc_id: s.vpc_id,
    name: s.name,
    service_type: s.service_type,
    instance_type: s.instance_type,
    resources: { cpu: r.cpu, memory_mib: r.memoryMiB },
    deployment_mode: s.deployment_mode,
    image: s.image,
    port: s.port,
    health_check_path: s.health_check_path,
    min_replicas: s.min_replicas,
    max_replicas: s.max_replicas,
    cron_schedule: s.cron_schedule,
    disk_size_gb: s.disk_size_gb,
    disk_mount_path: s.disk_mount_path,
    command: s.command,
    args: s.args,
    run_as_user: s.run_as_user,
    idle_timeout_seconds: s.idle_timeout_seconds ?? null,
    target_concurrency: s.target_concurrency ?? null,
    replicas: { desired: s.desired_replicas ?? s.min_replicas, ready: s.ready_replicas ?? 0 },
    status: s.status,
    status_message: s.status_message,
    url: serviceUrl(s, edge.port ? edge.settings.appsDomain : null),
    current_deployment_id: s.current_deployment_id,
    created_at: iso(s.created_at)!,
    updated_at: iso(s.updated_at)!,
    deleted_at: iso(s.deleted_at),
  };
}

export function deploymentJson(d: Deployment): z.infer<typeof deploymentSchema> {
  return {
    id: d.id,
    service_id: d.service_id,
    image: d.image,
    reason: d.reason,
    rollback_of: d.rollback_of,
    status: d.status,
    message: d.message,
    created_at: iso(d.created_at)!,
    finished_at: iso(d.finished_at),
  };
}

export function envVarJson(v: EnvVar): z.infer<typeof envVarSchema> {
  return 'secret_id' in v ? { id: v.id, key: v.key, secret_id: v.secret_id, secret_key: v.secret_key } : { id: v.id, key: v.key, value: v.value };
}

export const logLineSchema = z.object({
  timestamp: z.string().describe('When the replica printed it: ISO 8601, UTC, to the microsecond'),
  replica: z.string().describe('The replica index on Docker, the pod name on Kubernetes'),
  deployment_id: z.string().nullable(),
  stream: z.enum(['stdout', 'stderr']).describe('Kubernetes does not tell them apart: there every line reads stdout'),
  message: z.string().describe('The line, without its newline (a line over 256 KiB is cut into several)'),
});

export function logLineJson(l: LogLine): z.infer<typeof logLineSchema> {
  return { timestamp: microsOf(l.ts), replica: l.replica, deployment_id: l.deploymentId, stream: l.stream, message: l.message };
}
