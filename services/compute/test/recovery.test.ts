// What a crash leaves half done is found and finished when compute starts again: a create
// that never committed is undone, a rollout the cluster may already run is completed.
import { describe, it, expect, afterAll } from 'vitest';
import pg from 'pg';
import { generateIdentityKeys } from '@pier/kit';
import { createTestDatabase, infra } from '@pier/testing';
import { startCompute, until, cleanDocker, vpcContainers, docker, TINY_HTTP, type Compute, type TestDatabase } from './support.ts';

let db: TestDatabase;
const started: Compute[] = [];
const vpcs = new Set<string>();

afterAll(async () => {
  for (const c of started) await c.stop().catch(() => undefined);
  for (const v of vpcs) await cleanDocker(v);
  await db?.drop();
}, 60_000);

async function sql(query: string, params: unknown[] = []): Promise<any[]> {
  const client = new pg.Client({ connectionString: db.adminUrl });
  await client.connect();
  try {
    return (await client.query(query, params)).rows;
  } finally {
    await client.end();
  }
}

describe('recovery at start-up', () => {
  it('drops an unfinished create and finishes a pending rollout', async () => {
    db = await createTestDatabase(infra().postgresAdminUrl);
    const keys = await generateIdentityKeys();
    const first = await startCompute({}, { db, keys });
    started.push(first);
    vpcs.add(first.vpcId);
    const svc = (await first.post(first.base, { name: 'survivor', image: TINY_HTTP })).body;
    await until(
      () => first.get(`${first.base}/${svc.id}`).then((r) => r.body),
      (s) => s.status === 'running',
    );
    await first.stop();
    started.pop();

    // What a crash in the middle of two requests leaves behind.
    const [ghost] = await sql(
      `insert into compute.services (workspace_id, vpc_id, name, service_type, instance_type, deployment_mode, min_replicas, run_as_user, status, provisioned)
       values ($1, $2, 'ghost', 'web', 'svc.nano', 'always_on', 1, 1000, 'creating', false) returning id`,
      [first.workspaceId, first.vpcId],
    );
    const [config] = await sql(`select config from compute.deployments where id = $1`, [svc.current_deployment_id]);
    const [pending] = await sql(
      `insert into compute.deployments (service_id, image, reason, status, config, env, created_at)
       values ($1, $2, 'env', 'pending', $3, $4, now()) returning id`,
      [svc.id, TINY_HTTP, JSON.stringify(config.config), JSON.stringify([{ key: 'RECOVERED', value: 'yes' }])],
    );

    // The same workspace/VPC, seen by a new compute on the same database.
    const second = await startCompute({}, { db, keys });
    started.push(second);
    const base = first.base;
    // Tokens for the first compute's workspace and VPC: both trust the same identity key.
    const as = async (path: string) => {
      const res = await fetch(second.url + path, { headers: { 'x-pier-identity': await first.token('owner') } });
      return { status: res.status, body: await res.json() };
    };
    await until(
      () => sql(`select status from compute.deployments where id = $1`, [pending.id]),
      (r) => r[0]?.status !== 'pending',
    );
    expect(await sql(`select 1 from compute.services where id = $1`, [ghost.id])).toHaveLength(0);
    const history = await as(`${base}/${svc.id}/deployments`);
    expect(history.body.items[0]).toMatchObject({ id: pending.id, reason: 'env' });
    expect((await as(`${base}/${svc.id}/env`)).body.variables).toEqual([{ id: expect.any(String), key: 'RECOVERED', value: 'yes' }]);
    await until(
      () => as(`${base}/${svc.id}`).then((r) => r.body),
      (s) => s.status === 'running',
    );
    const [container] = (await vpcContainers(first.vpcId)).filter((c) => c.Labels['pier.service'] === svc.id);
    expect((await docker.getContainer(container!.Id).inspect()).Config.Env).toContain('RECOVERED=yes');
  });
});
