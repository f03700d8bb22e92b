// A fork into a second VPC of the same workspace, through the gateway: databases asks auth
// (gRPC FindVpc, on the caller's behalf) whether the target VPC is the caller's workspace's;
// the fork is a database of that VPC, reachable from that VPC's network with the real psql.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';
import { DATABASES_ENV, cleanupVpc, inVpc, waitForStatus } from './databases-helpers.ts';

let p: Platform;
let owner: Api;
let ws: string;
let staging: string;
let source: string;

const databases = (vpc: string) => `/api/v1/workspaces/${ws}/vpcs/${vpc}/databases`;
const psqlIn = (vpc: string, url: string, sql: string) => inVpc(vpc, 'pier/pg-managed:15', ['psql', '-X', '-q', '-tA', '-d', url, '-c', sql]);

beforeAll(async () => {
  p = await startPlatform({ env: { databases: DATABASES_ENV } });
  owner = p.api(p.bootstrap.token);
  ws = p.bootstrap.workspaceId;
  const vpc = await owner.post(`/api/v1/workspaces/${ws}/vpcs`, { name: 'staging' });
  expect(vpc.status).toBe(201);
  staging = vpc.body.id;
  const db = await owner.post(databases(p.bootstrap.vpcId), { name: 'orders' });
  expect(db.status).toBe(202);
  source = `${databases(p.bootstrap.vpcId)}/${db.body.id}`;
  await waitForStatus(owner, source, 'running');
  const conn = (await owner.get(`${source}/connection`)).body;
  expect((await psqlIn(p.bootstrap.vpcId, conn.database_url, "create table t (v text); insert into t values ('production')")).code).toBe(0);
}, 180_000);

afterAll(async () => {
  await p?.stop();
  if (p) {
    await cleanupVpc(p.bootstrap.vpcId);
    await cleanupVpc(staging);
  }
});

describe('a fork into another VPC of the workspace', () => {
  it("refuses a VPC that is not the workspace's, with 404 vpc_not_found", async () => {
    const other = await owner.post('/api/v1/workspaces', { name: 'elsewhere' });
    const foreign = (await owner.get(`/api/v1/workspaces/${other.body.id}/vpcs`)).body.items[0].id;
    for (const target_vpc_id of [foreign, '00000000-0000-4000-8000-000000000000', 'nope']) {
      const res = await owner.post(`${source}/fork`, { name: 'orders-staging', target_vpc_id });
      expect(res.status, target_vpc_id).toBe(404);
      expect(res.body.code).toBe('vpc_not_found');
    }
  });

  it('answers 409 backup_pending first, then forks into the VPC once the backup completed', async () => {
    const first = await owner.post(`${source}/fork`, { name: 'orders-staging', target_vpc_id: staging });
    expect(first.status).toBe(409);
    expect(first.body.code).toBe('backup_pending');
    let res = first;
    for (let i = 0; i < 240 && res.status === 409; i++) {
      await new Promise((r) => setTimeout(r, 500));
      res = await owner.post(`${source}/fork`, { name: 'orders-staging', target_vpc_id: staging });
      if (res.status === 409) expect(res.body.code).toBe('backup_pending');
    }
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ vpc_id: staging, name: 'orders-staging', status: 'creating', source: { kind: 'fork' } });

    const fork = `${databases(staging)}/${res.body.id}`;
    await waitForStatus(owner, fork, 'running');
    expect((await owner.get(databases(staging))).body.items.map((d: { name: string }) => d.name)).toEqual(['orders-staging']);
    const conn = (await owner.get(`${fork}/connection`)).body;
    const read = await psqlIn(staging, conn.database_url, 'select v from t');
    expect(read).toMatchObject({ code: 0, stdout: 'production\n' });
    // Another VPC's network does not even resolve its host.
    expect((await psqlIn(p.bootstrap.vpcId, conn.database_url, 'select 1')).code).not.toBe(0);
    // A name is unique per VPC: the same again in staging is a 409.
    const dup = await owner.post(`${source}/fork`, { name: 'orders-staging', target_vpc_id: staging });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('already_exists');
    // The staging VPC holds a database now: auth refuses to delete it.
    expect((await owner.delete(`/api/v1/workspaces/${ws}/vpcs/${staging}`)).status).toBe(409);
  }, 240_000);
});
