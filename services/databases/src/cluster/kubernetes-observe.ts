import type { Observation } from '../domain/status.ts';
import { LABELS } from './kubernetes-meta.ts';

// A database's live state on the kubernetes adapter, judged from what the operators
// report: CloudNativePG's Cluster phase, MOCO's conditions, and the outcome of our Jobs
// (MOCO's init Job; for a restored database, the Job that makes the restored data its own).

export interface K8sObject {
  metadata?: { name?: string; namespace?: string; uid?: string; labels?: Record<string, string> };
  spec?: { instances?: number; replicas?: number; backoffLimit?: number; bootstrap?: { recovery?: unknown }; restore?: unknown };
  status?: {
    phase?: string;
    readyInstances?: number;
    conditions?: { type: string; status: string; message?: string; reason?: string }[];
    succeeded?: number;
    failed?: number;
  };
}

/**
 * What the judges below read of an operator's cluster or of a Job, and nothing else: the
 * watched copies (kubernetes.ts) keep this, not the object (a Cluster's spec and status run
 * to kilobytes). The restore's source is kept as a mark: only that there is one is read.
 */
export function slimObserved(raw: Record<string, unknown>): K8sObject {
  const o = raw as K8sObject & { metadata?: { namespace?: string; uid?: string } };
  const meta = o.metadata ?? {};
  const database = meta.labels?.[LABELS.database];
  return {
    metadata: { name: meta.name, namespace: meta.namespace, uid: meta.uid, labels: database === undefined ? {} : { [LABELS.database]: database } },
    spec: {
      instances: o.spec?.instances,
      replicas: o.spec?.replicas,
      backoffLimit: o.spec?.backoffLimit,
      bootstrap: o.spec?.bootstrap?.recovery !== undefined ? { recovery: {} } : undefined,
      restore: o.spec?.restore !== undefined ? {} : undefined,
    },
    status: o.status
      ? {
          phase: o.status.phase,
          readyInstances: o.status.readyInstances,
          conditions: o.status.conditions?.map((c) => ({ type: c.type, status: c.status, message: c.message, reason: c.reason })),
          succeeded: o.status.succeeded,
          failed: o.status.failed,
        }
      : undefined,
  } as K8sObject;
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
