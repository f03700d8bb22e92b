// The cluster as compute sees it, after crossplane's managed-resource contract: `observe`
// says whether a service's workload exists and what state it is in; `apply` and `delete`
// are idempotent, so a retry after a crash or a timeout is always safe. Two adapters:
// cluster/docker.ts (one machine) and cluster/kubernetes.ts. The domain defines it; the
// adapters implement it.
import type { EnvEntry } from './env/env-input.ts';
import type { ServiceConfig } from './services/service-config.ts';
import type { InstanceResources } from '@pier/kit';
import type { Observation } from './services/status.ts';

export type { Observation, Phase } from './services/status.ts';

export interface VpcScope {
  workspaceId: string;
  vpcId: string;
}

/** Enough to find every object of one service in the cluster. */
export interface WorkloadRef extends VpcScope {
  serviceId: string;
  serviceName: string;
}

/** The desired state of one service: what one deployment of it runs. */
export interface WorkloadSpec extends WorkloadRef {
  deploymentId: string;
  image: string;
  config: ServiceConfig;
  resources: InstanceResources;
  /** Literals and secret references; adapters inject references their own way. */
  env: EnvEntry[];
  /** The volume (docker) or claim (kubernetes) that is the disk, when a restore replaced the one it was created with. */
  diskVolume?: string;
  /** Replicas to run now, when the elastic controller chose them (domain/elastic); absent: min_replicas. */
  replicas?: number;
}

/** What a live read needs to judge one service: the deployment it should be running. */
export interface ObserveTarget {
  serviceId: string;
  serviceType: ServiceConfig['service_type'];
  deploymentId: string | null;
  /** Replicas the deployment asks for (the elastic controller's count, else min_replicas; 0 means scaled to zero). */
  replicas: number;
  port: number | null;
  healthCheckPath: string | null;
}

export interface ObserveResult {
  observations: Map<string, Observation>;
  /** Requests this read made to the cluster's API (the benchmark's "cluster calls per list"). */
  calls: number;
}

/** What the cluster runs of one service: the deployments its replicas (or pods) belong to. */
export interface Workload extends WorkloadRef {
  deploymentIds: string[];
}

export interface ClusterPort {
  readonly kind: 'docker' | 'kubernetes';
  /** Answers when the cluster's API does; UnavailableError otherwise. */
  ping(): Promise<void>;
  /** Prepares the VPC's network (docker) or namespace and policy (kubernetes); proves the cluster answers. */
  ensureVpc(scope: VpcScope): Promise<void>;
  /** Makes the cluster run exactly `spec`: the new deployment's replicas, and no other deployment's. */
  apply(spec: WorkloadSpec): Promise<void>;
  /** Live state of every target in one VPC, in a constant number of API calls whatever the count. */
  observeMany(scope: VpcScope, targets: ObserveTarget[]): Promise<ObserveResult>;
  /** Every service the cluster runs something of in one VPC, in one API call (the reconciler's sweep). */
  workloads(scope: VpcScope): Promise<Workload[]>;
  /**
   * Which VPCs' workloads changed since a cursor (kubernetes, while its pod watch is
   * connected), so loops look only there; absent, or undefined from `vpcsChangedSince`,
   * when the adapter cannot tell: then anything may have changed.
   */
  readonly changes?: { cursor(): number; vpcsChangedSince(cursor: number): Set<string> | undefined };
  /** Removes everything of the service, its volume included. Removing what is not there succeeds. */
  delete(ref: WorkloadRef): Promise<void>;
  /** Background work the adapter owns (the docker adapter's cron scheduler); may do nothing. */
  start(): void;
  stop(): Promise<void>;
}

/**
 * The cluster refused the workload itself (an image it does not have, a manifest it
 * rejects): the deployment fails with this message; nothing is wrong with the request.
 */
export class WorkloadRejectedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WorkloadRejectedError';
  }
}
