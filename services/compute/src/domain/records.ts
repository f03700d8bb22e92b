// The records compute keeps, in the spec's own vocabulary (snake_case, as in the API).
import type { ServiceConfig } from './services/service-config.ts';
import type { DeploymentReason, DeploymentStatus, ServiceStatus } from './services/status.ts';
import type { EnvEntry } from './env/env-input.ts';

export interface Service extends ServiceConfig {
  id: string;
  workspace_id: string;
  vpc_id: string;
  status: ServiceStatus;
  status_message: string | null;
  /** False while a create waits for the cluster (never shown to clients). */
  provisioned: boolean;
  current_deployment_id: string | null;
  /** The volume (docker) or claim (kubernetes) holding the disk since a restore; null (or absent): the one it was created with. */
  disk_volume?: string | null;
  /** The replicas the elastic controller runs now (0: asleep); null: not elastic here, min_replicas applies. */
  desired_replicas?: number | null;
  /** Replicas ready now, as the last live read found them (status-refresh.ts); never stored. */
  ready_replicas?: number;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export interface Deployment {
  id: string;
  service_id: string;
  image: string;
  reason: DeploymentReason;
  rollback_of: string | null;
  status: DeploymentStatus;
  message: string | null;
  applied: boolean;
  config: ServiceConfig;
  env: EnvEntry[];
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

/**
 * What a status refresh reads of a deployment: no image or environment. The sweep reads one
 * for every resting service (10,000 at scale), and decoding whole rows was most of its time.
 */
export type DeploymentHead = Pick<Deployment, 'id' | 'service_id' | 'reason' | 'status' | 'message' | 'applied' | 'config' | 'created_at'>;

export type EnvVar = EnvEntry & { id: string };

export interface Scope {
  workspaceId: string;
  vpcId: string;
}
