// Both adapters read a service's state from its smallest running units — Docker
// containers, Kubernetes pods — and judge them by the same rules, here.
import type { Observation } from '../domain/services/status.ts';
import type { ObserveTarget, VpcScope, Workload } from '../domain/cluster-port.ts';

/**
 * A replica with no health probe counts as ready once it has kept running this long, so
 * a process that dies right after starting reads as crashed, not as briefly running
 * (Kubernetes' minReadySeconds, applied to pods and containers alike).
 */
export const MIN_READY_MS = 3_000;

export interface ReplicaUnit {
  deploymentId: string | null;
  /** `replica` of a web/worker; `run` of a cron tick; `template`: the docker adapter's cron definition. */
  role: 'replica' | 'run' | 'template';
  /** `pending`: not started or not yet healthy; `ready`: running and healthy; `done`: a run that finished well; `parked`: stopped by a sleep or scale-down, kept for the next start. */
  state: 'pending' | 'ready' | 'failed' | 'done' | 'parked';
  message: string | null;
  /** Creation time, ms since the epoch (orders a cron service's runs). */
  createdAt: number;
}

export interface JudgeOptions {
  /**
   * Docker has no controller that replaces a removed container, so a replica missing
   * from the wanted count is a failure there; Kubernetes recreates pods, so it is progress.
   */
  missingIsFailure: boolean;
  /** Docker keeps a cron service's definition as a container; without it the schedule is gone. */
  cronNeedsTemplate: boolean;
}

export function judge(target: ObserveTarget, all: ReplicaUnit[], opts: JudgeOptions): Observation {
  const current = all.filter((u) => u.deploymentId === target.deploymentId);
  if (target.serviceType === 'cron') {
    if (opts.cronNeedsTemplate && !current.some((u) => u.role === 'template')) {
      return { phase: all.length ? 'progressing' : 'absent', readyReplicas: 0, message: null };
    }
    const runs = current.filter((u) => u.role === 'run').sort((a, b) => b.createdAt - a.createdAt);
    const last = runs[0];
    if (last?.state === 'failed') return { phase: 'failed', readyReplicas: 0, message: last.message };
    return { phase: 'ready', readyReplicas: last && last.state !== 'done' ? 1 : 0, message: null };
  }

  const replicas = current.filter((u) => u.role === 'replica' && u.state !== 'parked');
  const ready = replicas.filter((u) => u.state === 'ready').length;
  const failed = replicas.find((u) => u.state === 'failed');
  if (failed) return { phase: 'failed', readyReplicas: ready, message: failed.message };
  if (target.replicas === 0) {
    return { phase: replicas.length ? 'progressing' : 'scaled', readyReplicas: ready, message: null };
  }
  if (replicas.length === 0) return { phase: all.length ? 'progressing' : 'absent', readyReplicas: 0, message: null };
  if (ready >= target.replicas) return { phase: 'ready', readyReplicas: ready, message: null };
  if (opts.missingIsFailure && replicas.length < target.replicas) {
    const missing = target.replicas - replicas.length;
    return { phase: 'failed', readyReplicas: ready, message: `${missing} of ${target.replicas} replicas are missing from the cluster` };
  }
  const waiting = replicas.find((u) => u.state === 'pending' && u.message);
  return { phase: 'progressing', readyReplicas: ready, message: waiting?.message ?? null };
}

/** The services of one VPC the cluster runs something of, from the labels of their containers or pods. */
export function groupWorkloads(scope: VpcScope, labelSets: Record<string, string>[], keys: { service: string; name: string; deployment: string }): Workload[] {
  const byService = new Map<string, Workload>();
  for (const labels of labelSets) {
    const serviceId = labels[keys.service];
    if (!serviceId) continue;
    const w =
      byService.get(serviceId) ?? byService.set(serviceId, { ...scope, serviceId, serviceName: labels[keys.name] ?? '', deploymentIds: [] }).get(serviceId)!;
    const deployment = labels[keys.deployment];
    if (deployment && !w.deploymentIds.includes(deployment)) w.deploymentIds.push(deployment);
  }
  return [...byService.values()];
}
