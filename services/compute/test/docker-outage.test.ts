// The fault promise for compute's writes that reach the Docker engine: while the engine
// cannot be reached, create and deploy answer 503 `cluster_unavailable` promptly with
// nothing written (no row, no event, no container); when the engine goes away in the
// middle of one, the reconciler undoes it once the engine is back.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startCompute, until, cleanDocker, vpcContainers, TINY_HTTP, type Compute } from './support.ts';
import { adminQuery, socketLink } from '@pier/testing';

let c: Compute;
// A relay in front of the real Docker engine; the checks below read the engine directly.
const link = socketLink({ path: '/var/run/docker.sock' });

beforeAll(async () => {
  await link.up();
  c = await startCompute({ PIER_DOCKER_HOST: `unix://${link.address}` });
}, 60_000);

afterAll(async () => {
  await link.up().catch(() => undefined);
  await c?.stop();
  await cleanDocker(c.vpcId);
  await link.down();
}, 60_000);

const sql = (query: string) => adminQuery(c.db.adminUrl, query, []);
const count = async (table: string) => Number((await sql(`select count(*)::int as n from compute.${table}`))[0].n);
const counts = async () => ({ services: await count('services'), deployments: await count('deployments'), outbox: await count('outbox') });
const status = (id: string) => c.get(`${c.base}/${id}`).then((r) => r.body);

/**
 * Every container in the VPC belongs to a live service and to its current deployment, no
 * deployment is left pending and no service in a transitional status.
 */
async function clusterMatchesRecords(): Promise<boolean> {
  const live = await sql(`select id::text, status, current_deployment_id::text as dep from compute.services where deleted_at is null`);
  const records = new Map(live.map((r) => [r.id, r.dep]));
  const pending = await sql(`select 1 from compute.deployments where status = 'pending'`);
  return (
    pending.length === 0 &&
    live.every((r) => r.status === 'running') &&
    (await vpcContainers(c.vpcId)).every(
      (x) => records.has(x.Labels['pier.service']!) && records.get(x.Labels['pier.service']!) === x.Labels['pier.deployment'],
    )
  );
}

async function timed<T>(f: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = performance.now();
  const value = await f();
  return { value, ms: performance.now() - t0 };
}

/** Waits until `id` runs one container of its current deployment, with nothing left over anywhere. */
async function converged(id: string): Promise<number> {
  const t0 = performance.now();
  await until(
    async () => {
      const s = await status(id);
      const mine = await vpcContainers(c.vpcId, id);
      return s.status === 'running' && mine.length === 1 && mine[0]!.Labels['pier.deployment'] === s.current_deployment_id && (await clusterMatchesRecords());
    },
    (ok) => ok,
    60_000,
  );
  return performance.now() - t0;
}

// A docker API request line: starting a container (its create went through).
const START = /^POST \/[^ ]*containers\/[0-9a-f]+\/start/m;

describe('the docker engine unreachable', () => {
  it('create and deploy answer 503 at once and write nothing', async () => {
    const steady = await c.post(c.base, { name: 'steady', image: TINY_HTTP });
    expect(steady.status).toBe(201);
    await converged(steady.body.id);
    const before = await counts();
    const containers = (await vpcContainers(c.vpcId)).map((x) => x.Id).sort();
    await link.down();
    try {
      const create = await timed(() => c.post(c.base, { name: 'nowhere', image: TINY_HTTP }));
      expect(create.value.status).toBe(503);
      expect(create.value.body).toMatchObject({ code: 'cluster_unavailable' });
      const deploy = await timed(() => c.post(`${c.base}/${steady.body.id}/deploy`, { image_tag: TINY_HTTP }));
      expect(deploy.value.status).toBe(503);
      expect(deploy.value.body).toMatchObject({ code: 'cluster_unavailable' });
      console.log(`compute 503 latency: create ${create.ms.toFixed(0)} ms, deploy ${deploy.ms.toFixed(0)} ms`);
      expect(create.ms).toBeLessThan(2_000);
      expect(deploy.ms).toBeLessThan(2_000);
      expect(await counts()).toEqual(before);
      expect((await vpcContainers(c.vpcId)).map((x) => x.Id).sort()).toEqual(containers);
    } finally {
      await link.up();
    }
    expect((await status(steady.body.id)).current_deployment_id).toBe(steady.body.current_deployment_id);
  });
});

describe('the docker engine gone in the middle of a write', () => {
  it('a deploy cut after its container was created is undone once the engine is back', async () => {
    const web = await c.post(c.base, { name: 'web', image: TINY_HTTP });
    await converged(web.body.id);
    const before = await counts();
    const cut = link.cutOn(START);
    const deploy = await c.post(`${c.base}/${web.body.id}/deploy`, { image_tag: TINY_HTTP });
    await cut;
    expect(deploy.status).toBe(503);
    expect(deploy.body).toMatchObject({ code: 'cluster_unavailable' });
    expect(await counts()).toEqual(before);
    // Read from the engine itself: it got the new deployment's container before the cut.
    const deployments = (await vpcContainers(c.vpcId, web.body.id)).map((x) => x.Labels['pier.deployment']);
    expect(deployments.some((d) => d !== web.body.current_deployment_id)).toBe(true);
    await link.up();
    const ms = await converged(web.body.id);
    console.log(`compute converged ${ms.toFixed(0)} ms after the engine returned (deploy cut)`);
    expect((await status(web.body.id)).current_deployment_id).toBe(web.body.current_deployment_id);
  });

  it('a create cut after its container was created leaves no service and no container', async () => {
    const before = await counts();
    const cut = link.cutOn(START);
    const create = await c.post(c.base, { name: 'halfway', image: TINY_HTTP });
    await cut;
    expect(create.status).toBe(503);
    expect(create.body).toMatchObject({ code: 'cluster_unavailable' });
    expect(await counts()).toEqual(before);
    // The engine got a container of the service that has no record.
    expect((await vpcContainers(c.vpcId)).filter((x) => x.Labels['pier.service-name'] === 'halfway')).toHaveLength(1);
    await link.up();
    const t0 = performance.now();
    await until(clusterMatchesRecords, (ok) => ok, 60_000);
    console.log(`compute converged ${(performance.now() - t0).toFixed(0)} ms after the engine returned (create cut)`);
    expect(await sql(`select 1 from compute.services where name = 'halfway'`)).toHaveLength(0);
  });
});
