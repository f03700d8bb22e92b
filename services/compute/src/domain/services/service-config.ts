import { z } from 'zod';
import { cronScheduleProblem, InputError, INSTANCE_TYPE_NAMES, reservedNameProblem, type InstanceType } from '@pier/kit';
import { IMAGE_REFERENCE_MAX, isImageReference } from './image-reference.ts';

export const SERVICE_TYPES = ['web', 'worker', 'cron'] as const;
export type ServiceType = (typeof SERVICE_TYPES)[number];
export const DEPLOYMENT_MODES = ['always_on', 'on_demand'] as const;
export type DeploymentMode = (typeof DEPLOYMENT_MODES)[number];

export const DEFAULT_WEB_PORT = 8080;
/** How long an on_demand service stays awake with no request (Render sleeps after 15 minutes too). */
export const DEFAULT_IDLE_TIMEOUT_SECONDS = 900;
/** Requests in flight per replica the autoscaler aims at. */
export const DEFAULT_TARGET_CONCURRENCY = 25;
export const DEFAULT_RUN_AS_USER = 1000;
/** Replica bound per service: well past one machine, low enough that a typo cannot ask for 10,000. */
export const MAX_REPLICAS = 50;
/**
 * Names become Docker container names and network aliases and Kubernetes object names
 * (`<name>-disk` for the volume claim), so they are DNS labels with room for a suffix.
 */
export const NAME_MAX = 50;
const NAME_PATTERN = /^[a-z]([a-z0-9-]*[a-z0-9])?$/;

/** The configuration of a service: every field of the spec's table, defaults applied. */
export interface ServiceConfig {
  name: string;
  service_type: ServiceType;
  instance_type: InstanceType;
  deployment_mode: DeploymentMode;
  image: string | null;
  port: number | null;
  health_check_path: string | null;
  min_replicas: number;
  max_replicas: number | null;
  cron_schedule: string | null;
  disk_size_gb: number | null;
  disk_mount_path: string | null;
  command: string[] | null;
  args: string[] | null;
  run_as_user: number;
  /** on_demand only: seconds with no request before the service sleeps; null for always_on. */
  idle_timeout_seconds: number | null;
  /** web only: the requests in flight per replica the autoscaler aims at; null for workers and crons. */
  target_concurrency: number | null;
}

const name = z
  .string()
  .max(NAME_MAX, `at most ${NAME_MAX} characters`)
  .regex(NAME_PATTERN, 'lowercase letters, digits and "-", starting with a letter and ending with a letter or digit');
const image = z.string().max(IMAGE_REFERENCE_MAX).refine(isImageReference, 'not an image reference ([registry/]repository[:tag][@digest])');
const urlPath = z
  .string()
  .max(1024)
  .regex(/^\/[^\s?#]*$/, 'an absolute HTTP path such as /healthz');
const mountPath = z
  .string()
  .max(1024)
  .regex(/^\/[^\0]*$/, 'an absolute path')
  .refine((p) => p !== '/' && !p.split('/').some((s) => s === '..' || s === '.'), 'an absolute path other than /, without . or .. segments');
const strings = z.array(z.string().max(4096, 'each entry at most 4096 characters')).max(256, 'at most 256 entries');

/** The fields both create and PATCH take. `null` on PATCH clears an optional field. */
const configFields = {
  service_type: z.enum(SERVICE_TYPES).nullish(),
  instance_type: z.enum(INSTANCE_TYPE_NAMES).nullish(),
  deployment_mode: z.enum(DEPLOYMENT_MODES).nullish(),
  image: image.nullish(),
  port: z.int().min(1).max(65535).nullish(),
  health_check_path: urlPath.nullish(),
  min_replicas: z.int().min(0).max(MAX_REPLICAS).nullish(),
  max_replicas: z.int().min(1).max(MAX_REPLICAS).nullish(),
  cron_schedule: z.string().min(1).max(200).nullish(),
  disk_size_gb: z.int().min(1).max(1024).nullish(),
  disk_mount_path: mountPath.nullish(),
  command: strings.min(1, 'at least one entry (omit the field to keep the image entrypoint)').nullish(),
  args: strings.nullish(),
  run_as_user: z.int().min(0).max(2_147_483_647).nullish(),
  idle_timeout_seconds: z.int().min(10).max(86_400).nullish(),
  target_concurrency: z.int().min(1).max(1000).nullish(),
};

// Strict: an unknown field (a typo such as `replica`) is a 400, never silently ignored.
// Only a new name is checked against the platform's prefixes: a PATCH repeating the name of
// a service made before the rule must keep working.
const newName = name.superRefine((n, ctx) => {
  const problem = reservedNameProblem(n);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});
export const createServiceBody = z.strictObject({ name: newName, ...configFields });
export const patchServiceBody = z.strictObject({ name: name.optional(), ...configFields });
export type CreateServiceInput = z.infer<typeof createServiceBody>;
export type PatchServiceInput = z.infer<typeof patchServiceBody>;

function invalid(field: string, message: string): InputError {
  return new InputError(`${field}: ${message}`, 'invalid_request', { field });
}

/** Create: the spec's defaults, then its cross-field rules. */
export function configFromCreate(input: CreateServiceInput): ServiceConfig {
  const type = input.service_type ?? 'web';
  const mode = input.deployment_mode ?? 'always_on';
  return checkConfig({
    name: input.name,
    service_type: type,
    instance_type: input.instance_type ?? 'svc.nano',
    deployment_mode: mode,
    image: input.image ?? null,
    port: input.port ?? (type === 'web' ? DEFAULT_WEB_PORT : null),
    health_check_path: input.health_check_path ?? null,
    // The contract's default: 1, and 0 with on_demand (it scales to zero).
    min_replicas: input.min_replicas ?? (mode === 'on_demand' ? 0 : 1),
    max_replicas: input.max_replicas ?? null,
    cron_schedule: input.cron_schedule ?? null,
    disk_size_gb: input.disk_size_gb ?? null,
    disk_mount_path: input.disk_mount_path ?? null,
    command: input.command ?? null,
    args: input.args ?? null,
    run_as_user: input.run_as_user ?? DEFAULT_RUN_AS_USER,
    idle_timeout_seconds: input.idle_timeout_seconds ?? null,
    target_concurrency: input.target_concurrency ?? null,
  });
}

/**
 * PATCH: fields present replace, `null` clears, absent keep. When `service_type` changes,
 * fields that belonged to the old type and were not sent (a web's default port, a cron's
 * schedule) are dropped and the new type's defaults apply, so switching type does not
 * need the caller to clear them by hand.
 */
export function configFromPatch(current: ServiceConfig, patch: PatchServiceInput): ServiceConfig {
  if (patch.name !== undefined && patch.name !== current.name) {
    throw invalid('name', 'cannot be changed: other services reach this one by its name; create a new service instead');
  }
  const has = (k: keyof PatchServiceInput) => Object.prototype.hasOwnProperty.call(patch, k) && patch[k] !== undefined;
  const pick = <K extends keyof ServiceConfig & keyof PatchServiceInput>(k: K): ServiceConfig[K] =>
    (has(k) ? (patch[k] ?? null) : current[k]) as ServiceConfig[K];

  const type = patch.service_type ?? current.service_type;
  const typeChanged = type !== current.service_type;
  const next: ServiceConfig = {
    name: current.name,
    service_type: type,
    instance_type: patch.instance_type ?? current.instance_type,
    deployment_mode: patch.deployment_mode ?? current.deployment_mode,
    image: pick('image'),
    port: pick('port'),
    health_check_path: pick('health_check_path'),
    min_replicas: patch.min_replicas ?? (has('min_replicas') ? 1 : current.min_replicas),
    max_replicas: pick('max_replicas'),
    cron_schedule: pick('cron_schedule'),
    disk_size_gb: pick('disk_size_gb'),
    disk_mount_path: pick('disk_mount_path'),
    command: pick('command'),
    args: pick('args'),
    run_as_user: patch.run_as_user ?? current.run_as_user,
    idle_timeout_seconds: pick('idle_timeout_seconds'),
    target_concurrency: pick('target_concurrency'),
  };
  if (typeChanged) {
    if (!has('port')) next.port = null;
    if (!has('health_check_path') && type !== 'web') next.health_check_path = null;
    if (!has('cron_schedule') && type !== 'cron') next.cron_schedule = null;
    if (!has('deployment_mode') && type !== 'web') next.deployment_mode = 'always_on';
    if (!has('max_replicas') && type === 'cron') next.max_replicas = null;
    if (!has('target_concurrency') && type !== 'web') next.target_concurrency = null;
  }
  // Leaving on_demand drops its idle timeout unless the same PATCH sets one (which is then refused).
  if (next.deployment_mode !== 'on_demand' && current.deployment_mode === 'on_demand' && !has('idle_timeout_seconds')) next.idle_timeout_seconds = null;
  if (next.service_type === 'web' && next.port === null) next.port = DEFAULT_WEB_PORT;
  return checkConfig(next);
}

/** The spec's rules that tie fields together, then the elastic defaults; each violation names its field. */
export function checkConfig(c: ServiceConfig): ServiceConfig {
  if (c.idle_timeout_seconds !== null && c.deployment_mode !== 'on_demand') {
    throw invalid('idle_timeout_seconds', 'applies to on_demand services only (always_on services never sleep)');
  }
  if (c.target_concurrency !== null && c.service_type !== 'web') {
    throw invalid('target_concurrency', `applies to web services only (a ${c.service_type} takes no requests; it scales on CPU)`);
  }
  if (c.service_type !== 'web') {
    if (c.port !== null) throw invalid('port', `${c.service_type} services do not listen on a port`);
    if (c.health_check_path !== null) throw invalid('health_check_path', `only web services are probed over HTTP`);
    if (c.deployment_mode === 'on_demand') throw invalid('deployment_mode', 'on_demand applies to web services only (requests are what wake it)');
  }
  if (c.service_type === 'cron') {
    if (c.cron_schedule === null) throw invalid('cron_schedule', 'required for cron services');
    const problem = cronScheduleProblem(c.cron_schedule);
    if (problem) throw invalid('cron_schedule', problem);
    if (c.max_replicas !== null) throw invalid('max_replicas', 'cron services run one container per tick and do not autoscale');
  } else if (c.cron_schedule !== null) {
    throw invalid('cron_schedule', 'applies to cron services only');
  }
  if (c.min_replicas === 0 && c.deployment_mode !== 'on_demand') {
    throw invalid('min_replicas', '0 is allowed only with deployment_mode on_demand');
  }
  if (c.max_replicas !== null && c.max_replicas < c.min_replicas) {
    throw invalid('max_replicas', `must not be below min_replicas (${c.min_replicas})`);
  }
  if ((c.disk_size_gb === null) !== (c.disk_mount_path === null)) {
    throw c.disk_size_gb === null ? invalid('disk_size_gb', 'required with disk_mount_path') : invalid('disk_mount_path', 'required with disk_size_gb');
  }
  // A persistent volume is mounted read-write by one replica at a time (ReadWriteOnce).
  if (c.disk_size_gb !== null && (c.min_replicas > 1 || (c.max_replicas ?? 0) > 1)) {
    throw invalid(c.min_replicas > 1 ? 'min_replicas' : 'max_replicas', 'a service with a disk runs a single replica');
  }
  return withElasticDefaults(c);
}

/**
 * The elastic fields with their defaults: 900 s of idleness for on_demand, 25 requests per
 * replica for web services. Also applied to the configuration of deployments made before
 * these fields existed.
 */
export function withElasticDefaults(c: ServiceConfig): ServiceConfig {
  return {
    ...c,
    idle_timeout_seconds: c.deployment_mode === 'on_demand' ? (c.idle_timeout_seconds ?? DEFAULT_IDLE_TIMEOUT_SECONDS) : null,
    target_concurrency: c.service_type === 'web' ? (c.target_concurrency ?? DEFAULT_TARGET_CONCURRENCY) : null,
  };
}

/** The fewest replicas an awake service runs: min_replicas, and at least one while an on_demand service is awake. */
export function replicaFloor(c: ServiceConfig): number {
  return Math.max(1, c.min_replicas);
}

/**
 * Whether the elastic controller manages the service's replica count: it sleeps (web,
 * on_demand), or scales between a floor and max_replicas (a web service on its requests, a
 * worker on its CPU). A cron service runs one container per tick.
 */
export function isElastic(c: ServiceConfig): boolean {
  if (c.service_type === 'cron') return false;
  return c.deployment_mode === 'on_demand' || (c.max_replicas ?? 0) > replicaFloor(c);
}

/** Fields whose change has to reach the running containers (everything but `image`, which only a deploy changes). */
export function workloadChanged(before: ServiceConfig, after: ServiceConfig): boolean {
  const keys = Object.keys(after) as (keyof ServiceConfig)[];
  return keys.some((k) => k !== 'image' && k !== 'name' && JSON.stringify(before[k]) !== JSON.stringify(after[k]));
}
