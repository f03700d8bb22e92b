// CPU and memory of every running replica on docker, for service metrics
// (domain/metrics): one filtered container listing, then the Engine API's stats of each
// running replica (`one-shot`, answered at once, as docker-cpu.ts reads them for workers).
// CPU is the CPU time used between this read and the previous one of the same container
// over the time between them, in cores; a container read for the first time has no rate
// yet. Memory is what `docker stats` shows: the cgroup's usage less its inactive page cache.
import type { DockerEngine } from './docker-engine.ts';
import { KIND_SERVICE, LABEL } from './docker-labels.ts';
import type { ReplicaUsage, UsagePort } from '../domain/metrics/metrics-port.ts';

interface UsageStats {
  read: string;
  cpu_stats?: { cpu_usage?: { total_usage?: number } };
  memory_stats?: { usage?: number; stats?: Record<string, number> };
}

/** Stats requests at once: the engine answers each from the cgroup files, but not for free. */
const CONCURRENCY = 8;

export function memoryOf(stats: UsageStats): number {
  const m = stats.memory_stats;
  if (!m?.usage) return 0;
  const inactive = m.stats?.inactive_file ?? m.stats?.total_inactive_file ?? 0;
  return Math.max(0, m.usage - (inactive < m.usage ? inactive : 0));
}

export class DockerUsage implements UsagePort {
  /** The previous read of each container: when (ms) and its CPU time so far (ns). */
  private last = new Map<string, { at: number; usage: number }>();

  constructor(private readonly engine: DockerEngine) {}

  async usage(): Promise<ReplicaUsage[]> {
    const containers = await this.engine.call('container list', () =>
      this.engine.docker.listContainers({
        filters: JSON.stringify({ label: [`${LABEL.managed}=true`, `${LABEL.kind}=${KIND_SERVICE}`], status: ['running'] }),
      }),
    );
    const running = containers.filter((c) => c.Labels[LABEL.service] && c.Labels[LABEL.role] !== 'template');
    const next = new Map<string, { at: number; usage: number }>();
    const out: ReplicaUsage[] = [];
    for (let i = 0; i < running.length; i += CONCURRENCY) {
      await Promise.all(
        running.slice(i, i + CONCURRENCY).map(async (c) => {
          const stats = (await this.engine
            .call('container stats', () => this.engine.docker.getContainer(c.Id).stats({ stream: false, 'one-shot': true }))
            .catch(() => null)) as UsageStats | null;
          if (!stats) return; // gone since the listing
          const sample = { at: Date.parse(stats.read), usage: stats.cpu_stats?.cpu_usage?.total_usage ?? 0 };
          next.set(c.Id, sample);
          const prev = this.last.get(c.Id);
          const elapsedNs = prev ? (sample.at - prev.at) * 1e6 : 0;
          const cpuCores = prev && elapsedNs > 0 && sample.usage >= prev.usage ? (sample.usage - prev.usage) / elapsedNs : null;
          out.push({ serviceId: c.Labels[LABEL.service]!, replica: c.Id, cpuCores, memoryBytes: memoryOf(stats) });
        }),
      );
    }
    this.last = next;
    return out;
  }
}
