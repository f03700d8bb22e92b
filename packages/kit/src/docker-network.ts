import type Docker from 'dockerode';
import { vpcBridge, vpcNetwork } from './cluster-names.ts';

// A VPC's Docker network is shared: compute's services and the databases both join
// `vpcNetwork(vpcId)`, and either service may be the first to need it, at the same moment
// as the other. Docker does not keep network names unique (CheckDuplicate is best effort
// under concurrent creates), so every creator follows one rule that converges on a single
// network: create when missing, list by exact name, keep the oldest, remove the rest.

/** The network a VPC's containers join, and what the databases' access rules need of it. */
export interface VpcNetworkFacts {
  id: string;
  name: string;
  subnets: string[];
  gateways: string[];
}

/** Creates for one VPC in this process run one at a time: no duplicate is ever made here. */
const pending = new Map<string, Promise<unknown>>();

/**
 * The VPC's network, created (bridge, with `labels`) when missing. Tolerant of another
 * process creating it at the same moment: duplicates that exist after the create are
 * removed, keeping the oldest (Docker refuses to remove one that containers use, and that
 * refusal is ignored: such a network is left as it is). Engine errors are thrown as
 * dockerode gives them; the caller translates them.
 */
export async function ensureVpcNetwork(docker: Docker, vpcId: string, labels: Record<string, string>): Promise<VpcNetworkFacts> {
  const name = vpcNetwork(vpcId);
  const previous = pending.get(name) ?? Promise.resolve();
  const mine = previous.catch(() => undefined).then(() => ensure(docker, vpcId, name, labels));
  pending.set(name, mine);
  try {
    return await mine;
  } finally {
    if (pending.get(name) === mine) pending.delete(name);
  }
}

async function ensure(docker: Docker, vpcId: string, name: string, labels: Record<string, string>): Promise<VpcNetworkFacts> {
  let found = await withName(docker, name);
  if (found.length === 0) {
    try {
      await docker.createNetwork({
        Name: name,
        Driver: 'bridge',
        CheckDuplicate: true,
        // A bridge name of ours (not Docker's br-<id>): compute's host firewall covers every
        // VPC by its prefix (VPC_BRIDGE_PREFIX), and a second network of the same VPC cannot
        // take the same name, so concurrent creators can no longer make a duplicate.
        Options: { 'com.docker.network.bridge.name': vpcBridge(vpcId) },
        Labels: labels,
      });
    } catch (err) {
      // 409: another process made it between our list and our create; 403: its bridge name
      // is taken, by that same network of another process.
      const code = (err as { statusCode?: number })?.statusCode;
      if (code !== 409 && code !== 403) throw err;
    }
    found = await withName(docker, name);
  }
  const [oldest, ...duplicates] = found;
  if (!oldest) throw new Error(`docker network ${name} was created but is not listed`);
  for (const dup of duplicates)
    await docker
      .getNetwork(dup.Id)
      .remove()
      .catch(() => undefined);
  const configs = oldest.IPAM?.Config ?? [];
  return {
    id: oldest.Id,
    name,
    subnets: configs.map((c) => c.Subnet).filter((s): s is string => !!s),
    gateways: configs.map((c) => c.Gateway).filter((s): s is string => !!s),
  };
}

/** Networks named exactly `name`, oldest first (the list filter matches substrings). */
async function withName(docker: Docker, name: string): Promise<Docker.NetworkInspectInfo[]> {
  const all = await docker.listNetworks({ filters: JSON.stringify({ name: [name] }) });
  return all.filter((n) => n.Name === name).sort((a, b) => Date.parse(a.Created) - Date.parse(b.Created) || a.Id.localeCompare(b.Id));
}
