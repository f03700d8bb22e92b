// The CPU a service's replicas use, for the elastic controller's workers (domain/elastic/
// worker-cpu.ts). The Engine API's stats give a container's CPU time so far
// (cpu_stats.cpu_usage.total_usage, ns) and when they were read; `one-shot` answers at once
// instead of waiting a second for a sample of its own (API 1.41). The use is the difference
// between this read and the previous one of the same container, against the time between
// them and the CPU the container was given (HostConfig.NanoCpus, read once per container).
import type Docker from 'dockerode';
import type { DockerEngine } from './docker-engine.ts';
import { LABEL } from './docker-labels.ts';

interface Sample {
  /** When the engine read it, ms since the epoch. */
  at: number;
  /** CPU time used so far, ns. */
  usage: number;
  /** Cores the container was given. */
  cpus: number;
}

interface ContainerStats {
  read: string;
  cpu_stats?: { cpu_usage?: { total_usage?: number } };
}

/** Reads of a service older than this are forgotten (a service deleted or no longer elastic). */
const FORGET_MS = 60_000;

export class ReplicaCpu {
  /** The previous read of each replica, by service then container. */
  private readonly last = new Map<string, { at: number; samples: Map<string, Sample> }>();

  constructor(
    private readonly engine: DockerEngine,
    private readonly list: (serviceId: string) => Promise<Docker.ContainerInfo[]>,
  ) {}

  /** The ElasticPort's `cpu`: each running replica's use since the previous call, as a fraction of the CPU it was given. */
  async read(serviceId: string): Promise<number[]> {
    const now = Date.now();
    for (const [id, seen] of this.last) if (now - seen.at > FORGET_MS) this.last.delete(id);
    const before = this.last.get(serviceId)?.samples ?? new Map<string, Sample>();
    const running = (await this.list(serviceId)).filter((c) => c.State === 'running' && c.Labels[LABEL.role] === 'replica');
    const samples = new Map<string, Sample>();
    const used: number[] = [];
    await Promise.all(
      running.map(async (c) => {
        const sample = await this.sample(c.Id, before.get(c.Id)?.cpus).catch(() => null);
        if (!sample) return; // stopped or removed since the listing: not a replica any more
        samples.set(c.Id, sample);
        const prev = before.get(c.Id);
        const elapsedNs = prev ? (sample.at - prev.at) * 1e6 : 0;
        // A restart starts the count again: the next read has a use.
        if (prev && elapsedNs > 0 && sample.usage >= prev.usage) used.push((sample.usage - prev.usage) / elapsedNs / sample.cpus);
      }),
    );
    this.last.set(serviceId, { at: now, samples });
    return used;
  }

  private async sample(id: string, knownCpus: number | undefined): Promise<Sample> {
    const container = this.engine.docker.getContainer(id);
    const cpus = knownCpus ?? (await this.givenCpus(container));
    const stats = (await this.engine.call('container stats', () => container.stats({ stream: false, 'one-shot': true }))) as ContainerStats;
    return { at: Date.parse(stats.read), usage: stats.cpu_stats?.cpu_usage?.total_usage ?? 0, cpus };
  }

  /** Its CPU limit in cores; a container with none may use the whole host, and one core is then what 100% means (the HPA's `cpu: 1` request). */
  private async givenCpus(container: Docker.Container): Promise<number> {
    const info = await this.engine.call('container inspect', () => container.inspect());
    const nano = info.HostConfig.NanoCpus ?? 0;
    if (nano > 0) return nano / 1e9;
    const { CpuQuota: quota = 0, CpuPeriod: period = 0 } = info.HostConfig;
    return quota > 0 && period > 0 ? quota / period : 1;
  }
}
