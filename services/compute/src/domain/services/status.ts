// Live status: what the cluster says, read through the stored intent (which deployment
// should be running, and why). Pure: the cluster read and the write-back live elsewhere.

// `restoring`: its disk is being restored from a backup (replicas stopped; domain/disk-backups/disk-restore.ts).
export const SERVICE_STATUSES = ['creating', 'running', 'deploying', 'restarting', 'scaled', 'crashed', 'deleting', 'deleted', 'restoring'] as const;
export type ServiceStatus = (typeof SERVICE_STATUSES)[number];

export const DEPLOYMENT_STATUSES = ['pending', 'deploying', 'succeeded', 'failed', 'superseded'] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];

export const DEPLOYMENT_REASONS = ['create', 'deploy', 'restart', 'rollback', 'env', 'config'] as const;
export type DeploymentReason = (typeof DEPLOYMENT_REASONS)[number];

/**
 * How one service's workload looks in the cluster:
 * - `absent`: nothing of it there;
 * - `progressing`: replicas of the wanted deployment are starting, or not healthy yet;
 * - `ready`: every wanted replica runs and passed its probe (cron: the schedule is in place
 *   and its last run, if any, did not fail);
 * - `failed`: a replica exited, is restart-looping, is missing, or its image cannot run;
 * - `scaled`: zero replicas wanted and none running.
 */
export type Phase = 'absent' | 'progressing' | 'ready' | 'failed' | 'scaled';

export interface Observation {
  phase: Phase;
  readyReplicas: number;
  /** What went wrong (for `failed`), told so a person can act on it. */
  message: string | null;
}

/** A rollout that has neither become healthy nor failed by then is failed. */
export const PROGRESS_DEADLINE_MS = 180_000;

export interface DeploymentState {
  id: string;
  status: DeploymentStatus;
  reason: DeploymentReason;
  /** False when the rollout failed before reaching the cluster (a missing secret). */
  applied: boolean;
  message: string | null;
  createdAt: Date;
}

export interface LiveStatus {
  status: ServiceStatus;
  message: string | null;
  /** Set when this observation settles the current deployment. */
  deployment?: { status: 'succeeded' | 'failed'; message: string | null };
}

/** The status a rollout shows until the cluster reports it healthy or failed. */
export function transitionalStatus(reason: DeploymentReason): ServiceStatus {
  if (reason === 'create') return 'creating';
  if (reason === 'restart') return 'restarting';
  return 'deploying';
}

export function liveStatus(stored: ServiceStatus, deployment: DeploymentState | null, obs: Observation, now: Date): LiveStatus {
  if (stored === 'deleting' || stored === 'deleted') return { status: stored, message: null };
  // Nothing was ever deployed (a service created without an image): it waits for a deploy.
  if (!deployment) return { status: 'creating', message: 'waiting for a first deploy' };
  if (deployment.status === 'failed' && !deployment.applied) return { status: 'crashed', message: deployment.message };

  const rolling = deployment.status === 'deploying';
  const settle = (status: 'succeeded' | 'failed', message: string | null) => (rolling ? { deployment: { status, message } } : {});
  const overdue = now.getTime() - deployment.createdAt.getTime() > PROGRESS_DEADLINE_MS;

  switch (obs.phase) {
    case 'ready':
      return { status: 'running', message: null, ...settle('succeeded', null) };
    case 'scaled':
      return { status: 'scaled', message: null, ...settle('succeeded', null) };
    case 'failed':
      return { status: 'crashed', message: obs.message, ...settle('failed', obs.message) };
    case 'progressing':
    case 'absent': {
      if (rolling && !overdue) return { status: transitionalStatus(deployment.reason), message: null };
      if (rolling) {
        const message =
          obs.phase === 'absent'
            ? `no replica appeared within ${PROGRESS_DEADLINE_MS / 1000}s`
            : `replicas did not become healthy within ${PROGRESS_DEADLINE_MS / 1000}s${obs.message ? `: ${obs.message}` : ''}`;
        return { status: 'crashed', message, ...settle('failed', message) };
      }
      // A deployment that succeeded still serves while the cluster replaces a replica; one
      // that failed (a crash loop caught between two restarts) stays crashed until a replica
      // is ready again; one whose replicas are all gone (removed outside Pier) does not serve.
      if (obs.phase === 'progressing') {
        return deployment.status === 'failed' ? { status: 'crashed', message: deployment.message ?? obs.message } : { status: 'running', message: null };
      }
      return { status: 'crashed', message: obs.message ?? 'no replica of the service is running in the cluster' };
    }
  }
}
