// ensureVpcNetwork against the real Docker engine: one network per VPC whoever creates it,
// however many ask at once, and a duplicate another process made is folded into the oldest.
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import Docker from 'dockerode';
import { VPC_BRIDGE_PREFIX, vpcBridge, vpcNetwork } from '../src/cluster-names.ts';
import { ensureVpcNetwork } from '../src/docker-network.ts';

const docker = new Docker();
const LABELS = { 'pier.managed': 'true', 'pier.test': 'true' };
const made: string[] = [];

async function named(name: string) {
  return (await docker.listNetworks({ filters: JSON.stringify({ name: [name] }) })).filter((n) => n.Name === name);
}

afterEach(async () => {
  for (const name of made.splice(0)) for (const n of await named(name)) await docker.getNetwork(n.Id).remove();
});

describe('ensureVpcNetwork', () => {
  it('creates the network once, however many callers ask at the same moment, and returns its subnet', async () => {
    const vpcId = randomUUID();
    made.push(vpcNetwork(vpcId));
    const results = await Promise.all([1, 2, 3, 4].map(() => ensureVpcNetwork(docker, vpcId, { ...LABELS, 'pier.vpc': vpcId })));
    const networks = await named(vpcNetwork(vpcId));
    expect(networks).toHaveLength(1);
    expect(networks[0]!.Labels).toMatchObject({ 'pier.vpc': vpcId, 'pier.test': 'true' });
    expect(new Set(results.map((r) => r.id))).toEqual(new Set([networks[0]!.Id]));
    expect(results[0]!.subnets.length).toBeGreaterThan(0);
    expect(results[0]!.gateways.length).toBeGreaterThan(0);
  });

  it('names the bridge interface after the VPC, under the prefix the host firewall covers', async () => {
    const vpcId = randomUUID();
    made.push(vpcNetwork(vpcId));
    const { id } = await ensureVpcNetwork(docker, vpcId, LABELS);
    const info = await docker.getNetwork(id).inspect();
    expect(info.Options?.['com.docker.network.bridge.name']).toBe(vpcBridge(vpcId));
    expect(vpcBridge(vpcId)).toMatch(new RegExp(`^${VPC_BRIDGE_PREFIX}[0-9a-f]{11}$`));
    // The kernel's limit for an interface name (IFNAMSIZ less its NUL).
    expect(vpcBridge(vpcId).length).toBe(15);
  });

  it('keeps the oldest when another process made a duplicate of the same name', async () => {
    const vpcId = randomUUID();
    const name = vpcNetwork(vpcId);
    made.push(name);
    // What a racing creator leaves behind: Docker accepts the same name twice.
    const first = await docker.createNetwork({ Name: name, Driver: 'bridge', Labels: LABELS });
    await docker.createNetwork({ Name: name, Driver: 'bridge', CheckDuplicate: false, Labels: LABELS });
    expect(await named(name)).toHaveLength(2);
    const kept = await ensureVpcNetwork(docker, vpcId, LABELS);
    expect(kept.id).toBe(first.id);
    expect((await named(name)).map((n) => n.Id)).toEqual([first.id]);
  });
});
