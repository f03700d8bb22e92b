// What compute's use cases need from its schema. The domain defines it; store/store.ts
// implements it with knex. A transaction is the same interface bound to one connection.
import type { Page, PageRequest, PierEvent } from '@pier/kit';
import type { Deployment, DeploymentHead, EnvVar, Service } from './records.ts';
import type { ServiceConfig } from './services/service-config.ts';
import type { ServiceStatus } from './services/status.ts';
import type { EnvEntry } from './env/env-input.ts';

export interface NewService extends ServiceConfig {
  /** Chosen by the caller, which holds the service's lock before the row exists. */
  id: string;
  workspace_id: string;
  vpc_id: string;
  status: ServiceStatus;
}

export interface NewDeployment {
  service_id: string;
  image: string;
  reason: Deployment['reason'];
  rollback_of: string | null;
  config: ServiceConfig;
  env: EnvEntry[];
}

export interface ComputeStore {
  transaction<T>(fn: (tx: ComputeStore) => Promise<T>): Promise<T>;
  writeEvent(event: PierEvent): Promise<void>;

  /** A new service, not yet provisioned. A live service of that name in the VPC: ConflictError. */
  insertService(row: NewService): Promise<Service>;
  /** Drops a service row that never became visible (its create failed). */
  deleteUnprovisioned(id: string): Promise<void>;
  /** A provisioned service of this VPC, deleted ones included. */
  findService(vpcId: string, id: string): Promise<Service | undefined>;
  /** The row with a lock held until the transaction ends. */
  lockService(id: string): Promise<Service | undefined>;
  /** Any row by id, whatever its VPC or state (recovery's view). */
  serviceById(id: string): Promise<Service | undefined>;
  /** The rows of these ids, whatever their VPC or state (ids with no row are left out). */
  servicesByIds(ids: string[]): Promise<Service[]>;
  listServices(vpcId: string, page: PageRequest): Promise<Page<Service>>;
  countServices(vpcId: string): Promise<number>;
  updateService(id: string, patch: Partial<Omit<Service, 'id' | 'created_at'>>): Promise<Service>;
  /** Moves the status only if it still is `from`; false when another writer got there first. */
  compareAndSetStatus(id: string, from: ServiceStatus, to: ServiceStatus, message: string | null): Promise<boolean>;
  /** Live provisioned services in one of these statuses (of these VPCs only, when given). */
  servicesInStatus(statuses: ServiceStatus[], vpcIds?: string[]): Promise<Service[]>;
  unprovisionedServices(createdBefore: Date): Promise<Service[]>;
  /** Services the elastic controller manages (desired_replicas set), not deleted, restoring or being deleted. */
  elasticServices(): Promise<Service[]>;
  /** Every VPC with a service row, deleted ones included (where the sweep looks). */
  serviceVpcs(): Promise<{ workspaceId: string; vpcId: string }[]>;
  /** Which of these ids are services of this database (deleted ones too): the rest are another compute's. */
  knownServiceIds(ids: string[]): Promise<Set<string>>;

  insertDeployment(row: NewDeployment): Promise<Deployment>;
  findDeployment(serviceId: string, id: string): Promise<Deployment | undefined>;
  deploymentsByIds(ids: string[]): Promise<Map<string, Deployment>>;
  /** The same, with only what a status refresh reads (status-refresh.ts). */
  deploymentHeadsByIds(ids: string[]): Promise<Map<string, DeploymentHead>>;
  /** Newest first. */
  listDeployments(serviceId: string, page: PageRequest): Promise<Page<Deployment>>;
  updateDeployment(id: string, patch: Partial<Pick<Deployment, 'status' | 'message' | 'applied' | 'finished_at'>>): Promise<void>;
  /** Marks a deployment's settled outcome if it is still rolling; false when it was not. */
  settleDeployment(id: string, status: 'succeeded' | 'failed', message: string | null): Promise<boolean>;
  /** Older rollouts of the service still in progress give way to a newer one. */
  supersedeRollouts(serviceId: string, exceptId: string): Promise<void>;
  deleteDeployment(id: string): Promise<void>;
  pendingDeployments(createdBefore: Date): Promise<Deployment[]>;
  /** A deployment row by id, pending ones included. */
  deploymentById(id: string): Promise<Deployment | undefined>;

  listEnv(serviceId: string): Promise<EnvVar[]>;
  replaceEnv(serviceId: string, entries: EnvEntry[]): Promise<EnvVar[]>;
}
