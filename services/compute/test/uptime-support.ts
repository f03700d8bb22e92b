// Where uptime checks reach a service in tests, standing in for the edge: the URL names a
// host that exists nowhere (`<name>-<id>.apps.test`, as the edge's URLs will look) and the
// connection goes to the running replica's address in its VPC network, found through the
// Docker engine at each check. A replica that is gone leaves its last address, as an edge
// would keep routing to it: the check then fails the way a dead upstream does.
import { vpcNetwork } from '@pier/kit';
import { vpcContainers } from '@pier/testing';
import type { ProbeTarget, ProbeTargetOf } from '../src/cluster/http-uptime-probe.ts';

export function replicaTarget(): ProbeTargetOf {
  const lastAddress = new Map<string, string>();
  return async (s): Promise<ProbeTarget | null> => {
    const running = (await vpcContainers(s.vpc_id, s.id)).find((c) => c.State === 'running');
    const ip = running?.NetworkSettings.Networks[vpcNetwork(s.vpc_id)]?.IPAddress || lastAddress.get(s.id);
    if (!ip) return null;
    lastAddress.set(s.id, ip);
    return { url: `http://${s.name}-${s.id.slice(0, 8)}.apps.test`, connectTo: { host: ip, port: s.port! } };
  };
}
