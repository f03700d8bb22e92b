import type { V1Pod } from '@kubernetes/client-node';
import { kubeletCatchingUp } from '@pier/kit/kubernetes';
import type { Observation, Phase } from '../domain/status.ts';
import { LABELS } from './kubernetes-meta.ts';

// A built-in database's live state from its pods (one list for a whole VPC), judged as
// the docker adapter judges its containers (docker-observe.ts): the primary's state is the
// database's while it is not ready; then the worst of its replicas and poolers. A server
// that is not ready says why in its readiness command's output (the images'
// `pier-health`: `starting: ...` while a restore or a replica's copy runs, `failed: ...`
// once it failed for good), asked of those pods alone.

const RANK: Record<Phase, number> = { ready: 0, starting: 1, failed: 2, absent: 3 };

/** Waiting reasons that will not pass by themselves. */
const STUCK = /CrashLoopBackOff|ImagePullBackOff|ErrImagePull|ErrImageNeverPull|InvalidImageName|CreateContainerConfigError|CreateContainerError/;

export function observePods(hasWorkloads: boolean, pods: V1Pod[], outputs: Map<string, string>): Observation {
  if (!hasWorkloads && pods.length === 0) return { phase: 'absent' };
  const live = pods.filter((p) => !p.metadata?.deletionTimestamp);
  const primary = live.find((p) => p.metadata?.labels?.[LABELS.role] === 'primary');
  if (!primary) return { phase: 'starting', reason: 'server: pod not created yet' };
  const first = observePod(primary, outputs.get(primary.metadata!.name!));
  if (first.phase !== 'ready') return first;
  let worst = first;
  for (const p of live.filter((p) => p !== primary)) {
    const seen = observePod(p, outputs.get(p.metadata!.name!));
    if (RANK[seen.phase] > RANK[worst.phase]) worst = seen;
  }
  return worst;
}

function whatOf(pod: V1Pod): string {
  const role = pod.metadata?.labels?.[LABELS.role];
  if (role === 'replica') return `replica ${Number(pod.metadata?.labels?.['apps.kubernetes.io/pod-index'] ?? 0) + 1}`;
  return role === 'primary' ? 'server' : (role ?? 'pod');
}

function observePod(pod: V1Pod, output: string | undefined): Observation {
  const what = whatOf(pod);
  if (pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) return { phase: 'ready' };
  const container = pod.status?.containerStatuses?.[0];
  const waiting = container?.state?.waiting;
  if (waiting?.reason && STUCK.test(waiting.reason) && !kubeletCatchingUp(waiting.message)) {
    const last = container?.lastState?.terminated;
    const said = last ? ` (last exit ${last.exitCode}${last.message ? `: ${last.message.trim()}` : ''})` : waiting.message ? `: ${waiting.message}` : '';
    return { phase: 'failed', reason: `${what} ${waiting.reason === 'CrashLoopBackOff' ? 'keeps exiting' : waiting.reason}${said}` };
  }
  if (pod.status?.phase === 'Pending') {
    const unscheduled = pod.status.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
    return { phase: 'starting', reason: `${what} pending${unscheduled?.message ? `: ${unscheduled.message}` : ''}` };
  }
  if (pod.status?.phase === 'Failed') return { phase: 'failed', reason: `${what} failed${pod.status.message ? `: ${pod.status.message}` : ''}` };
  const said = /^(starting|failed): ([\s\S]*)$/.exec(output ?? '');
  if (said) return { phase: said[1] === 'failed' ? 'failed' : 'starting', reason: `${what}: ${said[2]!.trim()}` };
  return { phase: 'starting', reason: `${what} starting` };
}
