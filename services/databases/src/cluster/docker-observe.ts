import type Docker from 'dockerode';
import type { Observation, Phase } from '../domain/status.ts';

// A database's live state on the docker adapter, judged from the container list (one
// Engine API call for a whole VPC): the server's health check, and the pooler's.

/** One database's phase from its containers (server, and pooler for postgresql). */
export function observeParts(parts: Docker.ContainerInfo[]): Observation {
  if (parts.length === 0) return { phase: 'absent' };
  const server = parts.find((c) => c.Labels['pier.component'] === 'server');
  if (!server) return { phase: 'failed', reason: 'the server container is missing' };
  if (server.Labels['pier.engine'] === 'postgresql' && !parts.some((c) => c.Labels['pier.component'] === 'pooler')) {
    return { phase: 'failed', reason: 'the pooler container is missing' };
  }
  const rank: Record<Phase, number> = { ready: 0, starting: 1, failed: 2, absent: 3 };
  let worst: Observation = { phase: 'ready' };
  // The server first: when both fail, its reason is the one worth reading.
  const ordered = [server, ...parts.filter((c) => c !== server)];
  for (const c of ordered) {
    const seen = observeContainer(c);
    if (rank[seen.phase] > rank[worst.phase]) worst = seen;
  }
  return worst;
}

function observeContainer(c: Docker.ContainerInfo): Observation {
  const what = c.Labels['pier.component'] ?? 'container';
  switch (c.State) {
    case 'running':
      if (c.Status.includes('(healthy)')) return { phase: 'ready' };
      if (c.Status.includes('(unhealthy)')) return { phase: 'failed', reason: `${what} health check failing` };
      return { phase: 'starting', reason: `${what} starting` };
    case 'created':
      return { phase: 'starting', reason: `${what} created` };
    case 'restarting':
      return { phase: 'failed', reason: `${what} keeps exiting (${c.Status})` };
    default:
      return { phase: 'failed', reason: `${what} ${c.State} (${c.Status})` };
  }
}
