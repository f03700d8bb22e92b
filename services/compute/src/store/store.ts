import { insertForKey, isUuid, keysetPage, mapPage, translatePgError, writeEvent, type Knex, type Page, type PageRequest, type PierEvent } from '@pier/kit';
import type { Deployment, DeploymentHead, EnvVar, Service } from '../domain/records.ts';
import type { DeploymentStatus, ServiceStatus } from '../domain/services/status.ts';
import type { EnvEntry } from '../domain/env/env-input.ts';
import type { ComputeStore, NewDeployment, NewService } from '../domain/store-port.ts';

type Db = Knex | Knex.Transaction;

const SERVICE_JSON = ['command', 'args'] as const;

/**
 * Ids as one PostgreSQL array parameter: `whereIn` binds a parameter an id, and a statement
 * takes at most 65,535 (a sweep reads the records of every workload at once). An id that is
 * no UUID matches no row, so it is left out rather than failing the cast.
 */
function uuidArray(ids: string[]): string {
  return `{${ids.filter(isUuid).join(',')}}`;
}

function serviceRow(r: Record<string, unknown>): Service {
  return r as unknown as Service;
}

function serviceValues(patch: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...patch };
  // Live from the cluster, never a column.
  delete out.ready_replicas;
  // jsonb columns take JSON text: a bare JS array would be sent as a Postgres array.
  for (const k of SERVICE_JSON) if (k in out) out[k] = out[k] === null ? null : JSON.stringify(out[k]);
  return out;
}

function deploymentRow(r: Record<string, unknown>): Deployment {
  return r as unknown as Deployment;
}

function envRow(r: { id: string; key: string; value: string | null; secret_id: string | null; secret_key: string | null }): EnvVar {
  return r.secret_id !== null ? { id: r.id, key: r.key, secret_id: r.secret_id, secret_key: r.secret_key! } : { id: r.id, key: r.key, value: r.value! };
}

export class KnexComputeStore implements ComputeStore {
  constructor(private readonly db: Db) {}

  transaction<T>(fn: (tx: ComputeStore) => Promise<T>): Promise<T> {
    return (this.db as Knex).transaction((trx) => fn(new KnexComputeStore(trx)));
  }

  writeEvent(event: PierEvent): Promise<void> {
    return writeEvent(this.db, event);
  }

  async insertService(row: NewService): Promise<Service> {
    try {
      const r = await insertForKey(this.db as Knex, async (q) => {
        const [inserted] = await q('services')
          .insert(serviceValues({ ...row, provisioned: false }))
          .returning('*');
        return inserted as { id: string };
      });
      return serviceRow(r);
    } catch (err) {
      return translatePgError(err, { unique: `a service named "${row.name}" already exists in this VPC` });
    }
  }

  async deleteUnprovisioned(id: string): Promise<void> {
    await this.db('services').where({ id, provisioned: false }).delete();
  }

  async findService(vpcId: string, id: string): Promise<Service | undefined> {
    const r = await this.db('services').where({ id, vpc_id: vpcId, provisioned: true }).first();
    return r ? serviceRow(r) : undefined;
  }

  async lockService(id: string): Promise<Service | undefined> {
    const r = await this.db('services').where({ id }).forUpdate().first();
    return r ? serviceRow(r) : undefined;
  }

  async serviceById(id: string): Promise<Service | undefined> {
    const r = await this.db('services').where({ id }).first();
    return r ? serviceRow(r) : undefined;
  }

  async servicesByIds(ids: string[]): Promise<Service[]> {
    if (ids.length === 0) return [];
    return (await this.db('services').whereRaw('id = any(?::uuid[])', [uuidArray(ids)])).map(serviceRow);
  }

  async listServices(vpcId: string, page: PageRequest): Promise<Page<Service>> {
    const q = this.db('services').where({ vpc_id: vpcId, provisioned: true }).whereNull('deleted_at');
    return mapPage(await keysetPage<Record<string, unknown>>(q, page), serviceRow);
  }

  async countServices(vpcId: string): Promise<number> {
    const r = await this.db('services').where({ vpc_id: vpcId }).whereNull('deleted_at').count<{ count: number }[]>('* as count');
    return Number(r[0]?.count ?? 0);
  }

  async updateService(id: string, patch: Partial<Omit<Service, 'id' | 'created_at'>>): Promise<Service> {
    const [r] = await this.db('services')
      .where({ id })
      .update({ ...serviceValues(patch), updated_at: this.db.fn.now() })
      .returning('*');
    return serviceRow(r);
  }

  async compareAndSetStatus(id: string, from: ServiceStatus, to: ServiceStatus, message: string | null): Promise<boolean> {
    const n = await this.db('services').where({ id, status: from }).update({ status: to, status_message: message, updated_at: this.db.fn.now() });
    return n > 0;
  }

  async servicesInStatus(statuses: ServiceStatus[], vpcIds?: string[]): Promise<Service[]> {
    const query = this.db('services').where({ provisioned: true }).whereIn('status', statuses).whereNull('deleted_at');
    if (vpcIds) query.whereIn('vpc_id', vpcIds.filter(isUuid));
    const rows = await query;
    return rows.map(serviceRow);
  }

  async serviceVpcs(): Promise<{ workspaceId: string; vpcId: string }[]> {
    const rows: { workspace_id: string; vpc_id: string }[] = await this.db('services').distinct('workspace_id', 'vpc_id');
    return rows.map((r) => ({ workspaceId: r.workspace_id, vpcId: r.vpc_id }));
  }

  async knownServiceIds(ids: string[]): Promise<Set<string>> {
    const valid = ids.filter(isUuid);
    if (valid.length === 0) return new Set();
    const rows: { id: string }[] = await this.db('services').whereIn('id', valid).select('id');
    return new Set(rows.map((r) => r.id));
  }

  async elasticServices(): Promise<Service[]> {
    const rows = await this.db('services').whereNotNull('desired_replicas').whereNull('deleted_at').whereNotIn('status', ['deleting', 'restoring']);
    return rows.map(serviceRow);
  }

  async unprovisionedServices(createdBefore: Date): Promise<Service[]> {
    const rows = await this.db('services').where({ provisioned: false }).where('created_at', '<', createdBefore);
    return rows.map(serviceRow);
  }

  async insertDeployment(row: NewDeployment): Promise<Deployment> {
    const [r] = await this.db('deployments')
      .insert({ ...row, status: 'pending', config: JSON.stringify(row.config), env: JSON.stringify(row.env) })
      .returning('*');
    return deploymentRow(r);
  }

  async findDeployment(serviceId: string, id: string): Promise<Deployment | undefined> {
    const r = await this.db('deployments').where({ id, service_id: serviceId }).whereNot({ status: 'pending' }).first();
    return r ? deploymentRow(r) : undefined;
  }

  async deploymentsByIds(ids: string[]): Promise<Map<string, Deployment>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db('deployments').whereRaw('id = any(?::uuid[])', [uuidArray(ids)]);
    return new Map(rows.map((r: Record<string, unknown>) => [r.id as string, deploymentRow(r)]));
  }

  async deploymentHeadsByIds(ids: string[]): Promise<Map<string, DeploymentHead>> {
    if (ids.length === 0) return new Map();
    const rows: DeploymentHead[] = await this.db('deployments')
      .select('id', 'service_id', 'reason', 'status', 'message', 'applied', 'config', 'created_at')
      .whereRaw('id = any(?::uuid[])', [uuidArray(ids)]);
    return new Map(rows.map((r) => [r.id, r]));
  }

  async listDeployments(serviceId: string, page: PageRequest): Promise<Page<Deployment>> {
    const q = this.db('deployments').where({ service_id: serviceId }).whereNot({ status: 'pending' });
    return mapPage(await keysetPage<Record<string, unknown>>(q, page, { order: 'desc' }), deploymentRow);
  }

  async updateDeployment(id: string, patch: Partial<Pick<Deployment, 'status' | 'message' | 'applied' | 'finished_at'>>): Promise<void> {
    await this.db('deployments')
      .where({ id })
      .update({ ...patch, updated_at: this.db.fn.now() });
  }

  async settleDeployment(id: string, status: 'succeeded' | 'failed', message: string | null): Promise<boolean> {
    const n = await this.db('deployments')
      .where({ id, status: 'deploying' })
      .update({ status, message, finished_at: this.db.fn.now(), updated_at: this.db.fn.now() });
    return n > 0;
  }

  async supersedeRollouts(serviceId: string, exceptId: string): Promise<void> {
    await this.db('deployments')
      .where({ service_id: serviceId, status: 'deploying' as DeploymentStatus })
      .whereNot({ id: exceptId })
      .update({ status: 'superseded', finished_at: this.db.fn.now(), updated_at: this.db.fn.now() });
  }

  async deleteDeployment(id: string): Promise<void> {
    await this.db('deployments').where({ id, status: 'pending' }).delete();
  }

  async pendingDeployments(createdBefore: Date): Promise<Deployment[]> {
    const rows = await this.db('deployments').where({ status: 'pending' }).where('created_at', '<', createdBefore);
    return rows.map(deploymentRow);
  }

  async deploymentById(id: string): Promise<Deployment | undefined> {
    const r = await this.db('deployments').where({ id }).first();
    return r ? deploymentRow(r) : undefined;
  }

  async listEnv(serviceId: string): Promise<EnvVar[]> {
    const rows = await this.db('env_vars').where({ service_id: serviceId }).orderBy('position');
    return rows.map(envRow);
  }

  async replaceEnv(serviceId: string, entries: EnvEntry[]): Promise<EnvVar[]> {
    await this.db('env_vars').where({ service_id: serviceId }).delete();
    if (entries.length === 0) return [];
    const rows = await this.db('env_vars')
      .insert(
        entries.map((e, position) => ({
          service_id: serviceId,
          key: e.key,
          position,
          value: 'value' in e ? e.value : null,
          secret_id: 'secret_id' in e ? e.secret_id : null,
          secret_key: 'secret_key' in e ? e.secret_key : null,
        })),
      )
      .returning('*');
    return rows.sort((a: { position: number }, b: { position: number }) => a.position - b.position).map(envRow);
  }
}
