// The running replicas of every service, by container name and address: what the edge's
// route DNS sends a host to (docker-edge.ts). One Engine API list covers all services, read again
// when the last one is older than FRESH_MS and a name is asked for; the answer never waits
// for that read once there is one (Caddy waits on the route DNS holding a lock every
// request needs), so a change reaches the edge within a read and Caddy's refresh.
import { vpcNetwork } from '@pier/kit';
import { LABEL, KIND_SERVICE } from './docker-labels.ts';
import type { DockerEngine } from './docker-engine.ts';

const FRESH_MS = 250;

export interface RunningReplica {
  containerId: string;
  /** `<container name>.<VPC network>`: the name Docker's DNS would answer too, qualified so no other network's alias can. */
  name: string;
  vpcId: string;
  address: string;
}

export class DockerReplicaNames {
  private byService = new Map<string, RunningReplica[]>();
  private byName = new Map<string, string>();
  private readAt = 0;
  private reading: Promise<void> | null = null;

  constructor(private readonly engine: DockerEngine) {}

  /** The service's running replicas on that VPC's network. */
  async of(serviceId: string, vpcId: string): Promise<RunningReplica[]> {
    if (Date.now() - this.readAt > FRESH_MS) {
      const read = this.read();
      // Only an answer with no list yet waits: later ones use the last list while it is read again.
      if (this.readAt === 0) await read;
      else read.catch(() => undefined);
    }
    return (this.byService.get(serviceId) ?? []).filter((r) => r.vpcId === vpcId);
  }

  /** The address of a replica by its qualified name, from the last list (the one its name came from). */
  addressOf(name: string): string | null {
    return this.byName.get(name) ?? null;
  }

  private read(): Promise<void> {
    this.reading ??= (async () => {
      try {
        const containers = await this.engine.call('container list', () =>
          this.engine.docker.listContainers({
            filters: JSON.stringify({
              label: [`${LABEL.managed}=true`, `${LABEL.kind}=${KIND_SERVICE}`, `${LABEL.role}=replica`],
              status: ['running'],
            }),
          }),
        );
        const byService = new Map<string, RunningReplica[]>();
        const byName = new Map<string, string>();
        for (const c of containers) {
          const serviceId = c.Labels[LABEL.service];
          const vpcId = c.Labels[LABEL.vpc];
          const container = c.Names[0]?.replace(/^\//, '');
          const network = vpcId ? vpcNetwork(vpcId) : '';
          const address = c.NetworkSettings?.Networks?.[network]?.IPAddress;
          if (!serviceId || !vpcId || !container || !address) continue;
          const name = `${container}.${network}`.toLowerCase();
          (byService.get(serviceId) ?? byService.set(serviceId, []).get(serviceId)!).push({ containerId: c.Id, name, vpcId, address });
          byName.set(name, address);
        }
        this.byService = byService;
        this.byName = byName;
        this.readAt = Date.now();
      } finally {
        this.reading = null;
      }
    })();
    return this.reading;
  }
}
