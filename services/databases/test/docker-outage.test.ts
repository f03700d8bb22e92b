// The fault promise for provisioning on the Docker engine: while the engine cannot be
// reached, POST databases answers 503 `cluster_unavailable` promptly with nothing written
// (no row, no event, no container or volume); when the engine goes away in the middle of
// a provision, the reconciler removes what it left once the engine is back, and a database
// already provisioned reads `running` again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Docker from 'dockerode';
import { socketLink } from '@pier/testing';
import { adminQuery, docker, startDatabases, testDockerCluster, until, type Databases } from './support.ts';

// A relay in front of the real Docker engine; the checks below read the engine directly.
const link = socketLink({ path: '/var/run/docker.sock' });
let h: Databases;
let installation = '';

beforeAll(async () => {
  await link.up();
  h = await startDatabases(
    {},
    {
      cluster: (id) => {
        installation = id;
        return testDockerCluster({ docker: new Docker({ socketPath: link.address }), installation: id });
      },
    },
  );
}, 60_000);

afterAll(async () => {
  await link.up().catch(() => undefined);
  await h?.stop();
  await link.down();
}, 120_000);

const sql = (query: string) => adminQuery(h.db.adminUrl, query, []);
const count = async (table: string) => Number((await sql(`select count(*)::int as n from databases.${table}`))[0].n);
const counts = async () => ({ databases: await count('databases'), outbox: await count('outbox') });

/** This installation's containers and volumes in the VPC, read from the engine itself. */
async function objects(): Promise<{ containers: string[]; volumes: string[] }> {
  const filters = JSON.stringify({ label: [`pier.installation=${installation}`, `pier.vpc=${h.vpcId}`] });
  const containers = (await docker.listContainers({ all: true, filters })).map((c) => c.Labels['pier.database'] ?? c.Names[0]!).sort();
  const volumes = ((await docker.listVolumes({ filters })).Volumes ?? []).map((v) => v.Name).sort();
  return { containers, volumes };
}

/** Every container and volume is one of a live record's, and no record is transitional. */
async function clusterMatchesRecords(): Promise<boolean> {
  const live = await sql(`select id::text, status from databases.databases where deleted_at is null`);
  const { containers, volumes } = await objects();
  const named = (name: string) => live.some((r) => name.includes(r.id));
  return live.every((r) => r.status === 'running') && containers.every(named) && volumes.every(named);
}

async function timed<T>(f: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = performance.now();
  const value = await f();
  return { value, ms: performance.now() - t0 };
}

const running = (id: string) =>
  until(
    () => h.request('GET', `${h.base}/${id}`).then((r) => r.body),
    (d) => d.status === 'running' || d.status === 'error',
    120_000,
  );

// Docker API request lines: creating a container, starting one.
const CREATE = /^POST \/[^ ]*containers\/create/m;
const START = /^POST \/[^ ]*containers\/[^/ ]+\/start/m;

describe('the docker engine unreachable', () => {
  it('provisioning answers 503 at once and writes nothing', async () => {
    const before = await counts();
    const present = await objects();
    await link.down();
    try {
      const res = await timed(() => h.request('POST', h.base, { name: 'nowhere' }));
      console.log(`databases 503 latency: provision ${res.ms.toFixed(0)} ms`);
      expect(res.value.status).toBe(503);
      expect(res.value.body).toMatchObject({ code: 'cluster_unavailable' });
      expect(res.ms).toBeLessThan(2_000);
      expect(await counts()).toEqual(before);
      expect(await objects()).toEqual(present);
    } finally {
      await link.up();
    }
  });
});

describe('the docker engine gone in the middle of a provision', () => {
  it('a provision cut after its volume and container were created leaves nothing once the engine is back', async () => {
    const before = await counts();
    const cut = link.cutOn(START);
    const res = await h.request('POST', h.base, { name: 'halfway' });
    await cut;
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ code: 'cluster_unavailable' });
    expect(await counts()).toEqual(before);
    // Read from the engine itself: it got the volume and container before the cut, and
    // the undo could not reach it.
    const left = await objects();
    expect(left.containers.length).toBeGreaterThan(0);
    expect(left.volumes.length).toBeGreaterThan(0);
    await link.up();
    const t0 = performance.now();
    await until(clusterMatchesRecords, (ok) => ok, 60_000);
    console.log(`databases converged ${(performance.now() - t0).toFixed(0)} ms after the engine returned (provision cut)`);
    expect(await objects()).toEqual({ containers: [], volumes: [] });
  });

  it('a database provisioned while the engine flaps ends running, with nothing left over', async () => {
    // The first container create is cut: the provision is a 503, then the engine is back.
    const cut = link.cutOn(CREATE);
    const failed = await h.request('POST', h.base, { name: 'second-try' });
    await cut;
    expect(failed.status).toBe(503);
    expect(failed.body).toMatchObject({ code: 'cluster_unavailable' });
    await link.up();
    const ok = await h.request('POST', h.base, { name: 'second-try' });
    expect(ok.status).toBe(202);
    expect(await running(ok.body.id)).toMatchObject({ status: 'running' });
    const t0 = performance.now();
    await until(clusterMatchesRecords, (v) => v, 60_000);
    console.log(`databases converged ${(performance.now() - t0).toFixed(0)} ms after the retry`);
    expect([...new Set((await objects()).containers)]).toEqual([ok.body.id]);
  });
});
