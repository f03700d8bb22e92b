import type { Observation } from '../domain/status.ts';

// A database's live state on the kubernetes adapter, judged from what the operators
// report: CloudNativePG's Cluster phase, MOCO's conditions, and the outcome of our Jobs
// (MOCO's init Job; for a restored database, the Job that makes the restored data its own).

export interface K8sObject {
  metadata?: { name?: string; labels?: Record<string, string> };
  spec?: { instances?: number; replicas?: number; backoffLimit?: number; bootstrap?: { recovery?: unknown }; restore?: unknown };
  status?: {
    phase?: string;
    readyInstances?: number;
    conditions?: { type: string; status: string; message?: string; reason?: string }[];
    succeeded?: number;
    failed?: number;
  };
}

const succeeded = (job: K8sObject | undefined) => (job?.status?.succeeded ?? 0) > 0;

function jobFailed(job: K8sObject | undefined, what: string): Observation | undefined {
  const failed = job?.status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');
  return failed && { phase: 'failed', reason: `${what} failed: ${failed.message ?? failed.reason ?? ''}`.trim() };
}

const RESTORE = 'making the restored data the database’s own';

export function observeCnpg(c: K8sObject, restoreJob?: K8sObject): Observation {
  const restored = c.spec?.bootstrap?.recovery !== undefined;
  const restoreFailed = restored ? jobFailed(restoreJob, RESTORE) : undefined;
  if (restoreFailed) return restoreFailed;
  const phase = c.status?.phase ?? '';
  if (phase === 'Cluster in healthy state' && (c.status?.readyInstances ?? 0) >= (c.spec?.instances ?? 1)) {
    return !restored || succeeded(restoreJob) ? { phase: 'ready' } : { phase: 'starting', reason: RESTORE };
  }
  if (/unable|cannot|fail(ed)?\b/i.test(phase) && !/failing over/i.test(phase)) return { phase: 'failed', reason: phase };
  return { phase: 'starting', reason: phase || 'cluster pending' };
}

export function observeMoco(m: K8sObject, initJob: K8sObject | undefined, restoreJob?: K8sObject): Observation {
  const cond = (type: string) => m.status?.conditions?.find((c) => c.type === type);
  const restored = m.spec?.restore !== undefined;
  const failed = jobFailed(initJob, 'database initialisation') ?? (restored ? jobFailed(restoreJob, RESTORE) : undefined);
  if (failed) return failed;
  if (cond('Available')?.status === 'True' && succeeded(initJob)) {
    return !restored || succeeded(restoreJob) ? { phase: 'ready' } : { phase: 'starting', reason: RESTORE };
  }
  return { phase: 'starting', reason: cond('Available')?.message ?? 'cluster pending' };
}
