import { InputError, ConflictError, INSTANCE_TYPE_NAMES, reservedNameProblem, type InstanceType } from '@pier/kit';
import type { ClusterCapabilities } from './capabilities.ts';
import { STORAGE_GB } from './capabilities.ts';
import type { DatabaseRecord, Engine } from './database.ts';

// The spec's provisioning and update rules. No I/O: the caller passes what the cluster
// adapter can run, and gets a complete spec back or an InputError naming the field.

export const NAME_MAX = 19;
const NAME_PATTERN = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

function invalid(field: string, message: string): InputError {
  return new InputError(`${field}: ${message}`, 'invalid_request', { field });
}

export function checkName(name: string): string {
  if (name.length === 0) throw invalid('name', 'is required');
  if (name.length > NAME_MAX) throw invalid('name', `must be ${NAME_MAX} characters or fewer`);
  if (!NAME_PATTERN.test(name)) {
    throw invalid('name', 'must be lowercase letters, digits and hyphens, starting and ending with a letter or digit');
  }
  const reserved = reservedNameProblem(name);
  if (reserved) throw invalid('name', reserved);
  return name;
}

/** The instance types an engine may run on: the whole ladder, except svc.nano for mysql (the spec's rule). */
export function instanceTypesOf(engine: Engine): InstanceType[] {
  return engine === 'mysql' ? INSTANCE_TYPE_NAMES.filter((t) => t !== 'svc.nano') : [...INSTANCE_TYPE_NAMES];
}

export const defaultInstanceType = (engine: Engine): InstanceType => (engine === 'mysql' ? 'svc.small' : 'svc.nano');

/** mysql's `replicas` count the instances of a set that needs a majority: odd only. */
export const oddReplicasOnly = (engine: Engine): boolean => engine === 'mysql';

function checkInstanceType(engine: Engine, type: InstanceType): InstanceType {
  if (!instanceTypesOf(engine).includes(type)) {
    throw invalid('instance_type', 'svc.nano is not available for mysql: choose svc.micro or larger (svc.small is the default)');
  }
  return type;
}

function checkStorage(gb: number): number {
  if (gb < STORAGE_GB.min || gb > STORAGE_GB.max) {
    throw invalid('storage_gb', `must be between ${STORAGE_GB.min} and ${STORAGE_GB.max}`);
  }
  return gb;
}

export interface ProvisionInput {
  name?: string;
  engine?: Engine;
  instance_type?: InstanceType;
  storage_gb?: number;
  postgres_version?: string;
  mysql_version?: string;
  replicas?: number;
  external_access_enabled?: boolean;
}

export interface ProvisionSpec {
  name: string;
  engine: Engine;
  instanceType: InstanceType;
  storageGb: number;
  version: string;
  replicas: number;
  externalAccessEnabled: boolean;
}

export function resolveProvision(input: ProvisionInput, caps: ClusterCapabilities): ProvisionSpec {
  if (input.name === undefined) throw invalid('name', 'is required');
  const name = checkName(input.name);
  const engine = input.engine ?? 'postgresql';
  const instanceType = checkInstanceType(engine, input.instance_type ?? defaultInstanceType(engine));
  const storageGb = checkStorage(input.storage_gb ?? STORAGE_GB.default);

  const engineCaps = caps.engines[engine];
  const versionField = engine === 'postgresql' ? 'postgres_version' : 'mysql_version';
  const otherField = engine === 'postgresql' ? 'mysql_version' : 'postgres_version';
  if ((engine === 'postgresql' ? input.mysql_version : input.postgres_version) !== undefined) {
    throw invalid(otherField, `does not apply to engine ${engine}; use ${versionField}`);
  }
  const version = (engine === 'postgresql' ? input.postgres_version : input.mysql_version) ?? engineCaps.defaultVersion;
  if (!engineCaps.versions.includes(version)) {
    throw invalid(
      versionField,
      `${version} is not available: the ${caps.adapter} cluster runs ${engineCaps.server} ${engineCaps.versions.join(', ')} for ${engine}`,
    );
  }

  const replicas = checkReplicas(engine, input.replicas ?? engineCaps.replicas.default, caps);

  return { name, engine, instanceType, storageGb, version, replicas, externalAccessEnabled: input.external_access_enabled ?? false };
}

/**
 * `replicas`: postgresql read replicas, 0 to the adapter's maximum; mysql instances in the
 * set (MOCO's meaning), odd only.
 */
export function checkReplicas(engine: Engine, replicas: number, caps: ClusterCapabilities): number {
  const bounds = caps.engines[engine].replicas;
  if (oddReplicasOnly(engine) && replicas % 2 === 0) {
    throw invalid('replicas', 'must be an odd number (1, 3, 5, ...) for mysql');
  }
  if (replicas < bounds.min || replicas > bounds.max) {
    const range = bounds.min === bounds.max ? `exactly ${bounds.min}` : `between ${bounds.min} and ${bounds.max}`;
    throw invalid('replicas', `must be ${range} for ${engine} on the ${caps.adapter} cluster`);
  }
  return replicas;
}

export interface UpdateInput {
  name?: string;
  instance_type?: InstanceType;
  storage_gb?: number;
  external_access_enabled?: boolean;
}

export interface UpdateSpec {
  name: string;
  instanceType: InstanceType;
  storageGb: number;
  externalAccessEnabled: boolean;
}

/** Rename, resize (storage only grows), toggle external access. */
export function resolveUpdate(current: DatabaseRecord, input: UpdateInput): UpdateSpec {
  if (Object.values(input).every((v) => v === undefined)) {
    throw new InputError('body: give at least one of name, instance_type, storage_gb, external_access_enabled', 'invalid_request');
  }
  if (current.status === 'deleting') throw new ConflictError('database is being deleted', 'database_deleting');
  // The same name again is no rename: a database named before the reserved prefixes keeps it.
  const name = input.name === undefined || input.name === current.name ? current.name : checkName(input.name);
  const instanceType = input.instance_type === undefined ? current.instanceType : checkInstanceType(current.engine, input.instance_type);
  let storageGb = current.storageGb;
  if (input.storage_gb !== undefined) {
    if (input.storage_gb < current.storageGb) {
      throw invalid('storage_gb', `can only grow (currently ${current.storageGb})`);
    }
    storageGb = checkStorage(input.storage_gb);
  }
  const externalAccessEnabled = input.external_access_enabled ?? current.externalAccessEnabled;
  return { name, instanceType, storageGb, externalAccessEnabled };
}

/** Whether an update changes anything the cluster runs (a rename does not). */
export function touchesCluster(current: DatabaseRecord, next: UpdateSpec): boolean {
  return next.instanceType !== current.instanceType || next.storageGb !== current.storageGb || next.externalAccessEnabled !== current.externalAccessEnabled;
}
