// Tenant isolation at the docker edge. The edge container joins the network of every VPC with
// a routed service, and Docker's DNS answers a bare name from the first network (in name
// order) that holds it. So a container of another tenant's VPC carrying the victim's edge
// alias (`pier-svc-<victim id>`), in a VPC whose network sorts first, received the victim's
// decrypted requests (reproduced: 20 of 20). The edge then resolved the alias qualified by
// the victim's own network; it now gets the victim's replicas from compute's route DNS, which
// lists them through the Engine API by their labels on the victim's network, so no name a
// container carries matters. Names with the platform's prefixes are refused at the API.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import http from 'node:http';
import { testEdge } from '@pier/testing';
import { vpcNetwork } from '@pier/kit';
import { startCompute, until, cleanDocker, docker, TINY_HTTP, type Compute } from './support.ts';

const APPS = 'apps.isolation.test';
const edge = testEdge(APPS);
// The attacker's VPC: its network `pier-vpc-0000…` sorts before any random VPC id's.
const attacker = { workspaceId: '00000000-0000-4000-8000-0000000000a1', vpcId: '00000000-0000-4000-8000-0000000000a2' };
const IMPOSTOR = `pier-test-impostor-${process.env.PIER_TEST_RUN ?? 'local'}`;

let c: Compute;
let edgeIp: string;
let victim: { id: string; url: string };

function viaEdge(host: string, pathname: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: edgeIp, port: 80, path: pathname, headers: { host }, timeout: 10_000 }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const running = (scope?: typeof attacker) => async (id: string) => {
  const base = scope ? `/api/v1/workspaces/${scope.workspaceId}/vpcs/${scope.vpcId}/services` : c.base;
  await until(
    () => c.request('GET', `${base}/${id}`, undefined, { scope }).then((r) => r.body.status),
    (s) => s === 'running',
    60_000,
  );
};

beforeAll(async () => {
  c = await startCompute(edge.env);
  const made = await c.post(c.base, { name: 'shop', image: TINY_HTTP, health_check_path: '/healthz' });
  expect(made.status).toBe(201);
  victim = made.body;
  await running()(victim.id);
  // The attacker's own routed service, so the edge joins the attacker's VPC network too.
  const own = await c.request(
    'POST',
    `/api/v1/workspaces/${attacker.workspaceId}/vpcs/${attacker.vpcId}/services`,
    { name: 'bait', image: TINY_HTTP },
    { scope: attacker },
  );
  expect(own.status).toBe(201);
  await running(attacker)(own.body.id);
  const info = await until(
    () =>
      docker
        .getContainer(edge.name)
        .inspect()
        .catch(() => undefined),
    (i) => Boolean(i?.State.Running && i.NetworkSettings.Networks[vpcNetwork(attacker.vpcId)]),
  );
  edgeIp = info!.NetworkSettings.Networks.bridge!.IPAddress;
}, 180_000);

afterAll(async () => {
  await docker
    .getContainer(IMPOSTOR)
    .remove({ force: true })
    .catch(() => undefined);
  await c?.stop();
  await edge.remove();
  if (c) {
    await cleanDocker(c.vpcId);
    await cleanDocker(attacker.vpcId);
  }
}, 60_000);

describe('the edge and a name another tenant controls', () => {
  it('refuses service names with the platform prefixes, naming the field', async () => {
    for (const name of [`pier-svc-${victim.id}`, 'pier-anything', 'db-orders-rw']) {
      const r = await c.request(
        'POST',
        `/api/v1/workspaces/${attacker.workspaceId}/vpcs/${attacker.vpcId}/services`,
        { name, image: TINY_HTTP },
        { scope: attacker },
      );
      expect(r.status, name).toBe(400);
      expect(r.body).toMatchObject({ code: 'invalid_request', field: 'name' });
      expect(r.body.error).toMatch(/platform's own/);
    }
  });

  it("sends the victim's traffic to the victim alone, even with its alias claimed in a VPC whose network sorts first", async () => {
    // However a tenant's container came to carry the alias, it sits in the tenant's own network.
    await docker
      .createContainer({
        name: IMPOSTOR,
        Image: TINY_HTTP,
        Env: ['WHO=attacker'],
        Labels: { 'pier.test': 'true', 'pier.test.run': process.env.PIER_TEST_RUN ?? '' },
        HostConfig: { NetworkMode: vpcNetwork(attacker.vpcId) },
        NetworkingConfig: { EndpointsConfig: { [vpcNetwork(attacker.vpcId)]: { Aliases: [`pier-svc-${victim.id}`] } } },
      })
      .then((ctr) => ctr.start());
    const host = new URL(victim.url).hostname;
    // The edge re-reads its upstreams four times a second: give it time to see the impostor.
    await new Promise((r) => setTimeout(r, 1500));
    let toVictim = 0;
    let toAttacker = 0;
    for (let i = 0; i < 20; i++) {
      const r = await viaEdge(host, '/cgi-bin/env');
      expect(r.status).toBe(200);
      if (r.body.includes('WHO=attacker')) toAttacker++;
      else if (r.body.includes('HOSTNAME=')) toVictim++;
    }
    expect({ toVictim, toAttacker }).toEqual({ toVictim: 20, toAttacker: 0 });
  });
});
