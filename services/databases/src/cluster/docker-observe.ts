import type Docker from 'dockerode';
import type { Observation, Phase } from '../domain/status.ts';

// A database's live state on the docker adapter, judged from the container list (one
// Engine API call for a whole VPC): the health checks of its server, its replicas and its
// poolers. A server that is not healthy says why in its health check's output (the
// images' `pier-health`: `starting: ...` while a restore or a replica's copy is under way,
// however long it takes; `failed: ...` when it failed for good), read with one inspect of
// that container only.

/** Containers whose health check output is worth reading: servers and replicas not (yet) healthy. */
export function needsHealthOutput(c: Docker.ContainerInfo): boolean {
  const component = c.Labels['pier.component'];
  return (component === 'server' || component === 'replica') && c.State === 'running' && !c.Status.includes('(healthy)');
}

/** The last health check output of an inspected container. */
export function lastHealthOutput(info: Docker.ContainerInspectInfo): string | undefined {
  const log = (info.State.Health as { Log?: { Output?: string }[] } | undefined)?.Log;
  return log?.[log.length - 1]?.Output?.trim() || undefined;
}

/** One database's phase from its containers; `outputs` holds the health output of those needsHealthOutput picked. */
export function observeParts(parts: Docker.ContainerInfo[], outputs: Map<string, string> = new Map()): Observation {
  if (parts.length === 0) return { phase: 'absent' };
  const server = parts.find((c) => c.Labels['pier.component'] === 'server');
  if (!server) return { phase: 'failed', reason: 'the server container is missing' };
  if (server.Labels['pier.engine'] === 'postgresql' && !parts.some((c) => c.Labels['pier.component'] === 'pooler')) {
    return { phase: 'failed', reason: 'the pooler container is missing' };
  }
  // While the server is not ready, the pooler and the replicas failing around it is its
  // consequence (a pooler whose server keeps restarting exits too): the server's state is
  // the database's, and its reason the one worth reading.
  const first = observeContainer(server, outputs.get(server.Id));
  if (first.phase !== 'ready') return first;
  const rank: Record<Phase, number> = { ready: 0, starting: 1, failed: 2, absent: 3 };
  let worst: Observation = first;
  for (const c of parts.filter((c) => c !== server)) {
    const seen = observeContainer(c, outputs.get(c.Id));
    if (rank[seen.phase] > rank[worst.phase]) worst = seen;
  }
  return worst;
}

function observeContainer(c: Docker.ContainerInfo, output: string | undefined): Observation {
  const replica = c.Labels['pier.replica'];
  const what = replica ? `replica ${replica}` : (c.Labels['pier.component'] ?? 'container');
  switch (c.State) {
    case 'running': {
      if (c.Status.includes('(healthy)')) return { phase: 'ready' };
      const said = /^(starting|failed): ([\s\S]*)$/.exec(output ?? '');
      if (said) return { phase: said[1] === 'failed' ? 'failed' : 'starting', reason: `${what}: ${said[2]!.trim()}` };
      if (c.Status.includes('(unhealthy)')) return { phase: 'failed', reason: `${what} health check failing${output ? `: ${output}` : ''}` };
      return { phase: 'starting', reason: `${what} starting` };
    }
    case 'created':
      return { phase: 'starting', reason: `${what} created` };
    case 'restarting':
      return { phase: 'failed', reason: `${what} keeps exiting (${c.Status})` };
    default:
      return { phase: 'failed', reason: `${what} ${c.State} (${c.Status})` };
  }
}
