import type { Observation } from '../domain/status.ts';

// A database's live state on the kubernetes adapter, judged from what the operators
// report: CloudNativePG's Cluster phase, MOCO's conditions and the init Job's outcome.

export interface K8sObject {
  metadata?: { labels?: Record<string, string> };
  spec?: { instances?: number; replicas?: number; backoffLimit?: number };
  status?: {
    phase?: string;
    readyInstances?: number;
    conditions?: { type: string; status: string; message?: string; reason?: string }[];
    succeeded?: number;
    failed?: number;
  };
}

export function observeCnpg(c: K8sObject): Observation {
  const phase = c.status?.phase ?? '';
  if (phase === 'Cluster in healthy state' && (c.status?.readyInstances ?? 0) >= (c.spec?.instances ?? 1)) return { phase: 'ready' };
  if (/unable|cannot|fail(ed)?\b/i.test(phase) && !/failing over/i.test(phase)) return { phase: 'failed', reason: phase };
  return { phase: 'starting', reason: phase || 'cluster pending' };
}

export function observeMoco(m: K8sObject, job: K8sObject | undefined): Observation {
  const cond = (type: string) => m.status?.conditions?.find((c) => c.type === type);
  const jobFailed = job?.status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');
  if (jobFailed) return { phase: 'failed', reason: `database initialisation failed: ${jobFailed.message ?? jobFailed.reason ?? ''}`.trim() };
  if (cond('Available')?.status === 'True' && (job?.status?.succeeded ?? 0) > 0) return { phase: 'ready' };
  return { phase: 'starting', reason: cond('Available')?.message ?? 'cluster pending' };
}
