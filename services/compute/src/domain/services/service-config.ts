import { z } from 'zod';
import { cronScheduleProblem, InputError, INSTANCE_TYPE_NAMES, reservedNameProblem, type InstanceType } from '@pier/kit';
import { IMAGE_REFERENCE_MAX, isImageReference } from './image-reference.ts';

export const SERVICE_TYPES = ['web', 'worker', 'cron'] as const;
export type ServiceType = (typeof SERVICE_TYPES)[number];
export const DEPLOYMENT_MODES = ['always_on', 'on_demand'] as const;
export type DeploymentMode = (typeof DEPLOYMENT_MODES)[number];

export const DEFAULT_WEB_PORT = 8080;
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
  return checkConfig({
    name: input.name,
    service_type: type,
    instance_type: input.instance_type ?? 'svc.nano',
    deployment_mode: input.deployment_mode ?? 'always_on',
    image: input.image ?? null,
    port: input.port ?? (type === 'web' ? DEFAULT_WEB_PORT : null),
    health_check_path: input.health_check_path ?? null,
    min_replicas: input.min_replicas ?? 1,
    max_replicas: input.max_replicas ?? null,
    cron_schedule: input.cron_schedule ?? null,
    disk_size_gb: input.disk_size_gb ?? null,
    disk_mount_path: input.disk_mount_path ?? null,
    command: input.command ?? null,
    args: input.args ?? null,
    run_as_user: input.run_as_user ?? DEFAULT_RUN_AS_USER,
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
  };
  if (typeChanged) {
    if (!has('port')) next.port = null;
    if (!has('health_check_path') && type !== 'web') next.health_check_path = null;
    if (!has('cron_schedule') && type !== 'cron') next.cron_schedule = null;
    if (!has('deployment_mode') && type !== 'web') next.deployment_mode = 'always_on';
    if (!has('max_replicas') && type === 'cron') next.max_replicas = null;
  }
  if (next.service_type === 'web' && next.port === null) next.port = DEFAULT_WEB_PORT;
  return checkConfig(next);
}

/** The spec's rules that tie fields together; each violation names its field. */
export function checkConfig(c: ServiceConfig): ServiceConfig {
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
  return c;
}

/** Fields whose change has to reach the running containers (everything but `image`, which only a deploy changes). */
export function workloadChanged(before: ServiceConfig, after: ServiceConfig): boolean {
  const keys = Object.keys(after) as (keyof ServiceConfig)[];
  return keys.some((k) => k !== 'image' && k !== 'name' && JSON.stringify(before[k]) !== JSON.stringify(after[k]));
}
