// Services through the gateway, as a script with an API key sees them, on the docker
// cluster with the locally built images: the spec's role table, every rule of create, the
// deploy → running path, secret references, and auth's refusal to delete a VPC in use.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';
import { startOidcProvider, type OidcProvider } from '../support/oidc.ts';
import { TINY_HTTP, cleanVpcs, containersOf, inspect, waitForStatus } from './services-support.ts';

const FORBIDDEN = { error: 'insufficient workspace permissions', code: expect.any(String) };

let p: Platform;
let oidc: OidcProvider;
let owner: Api;
let base: string;
const keys: Record<'owner' | 'admin' | 'developer' | 'viewer', string> = {} as never;
const extraVpcs: string[] = [];

beforeAll(async () => {
  oidc = await startOidcProvider();
  p = await startPlatform({ env: { auth: oidc.env } });
  owner = p.api(p.bootstrap.token);
  const ws = p.bootstrap.workspaceId;
  base = `/api/v1/workspaces/${ws}/vpcs/${p.bootstrap.vpcId}/services`;
  keys.owner = p.bootstrap.token;
  for (const role of ['admin', 'developer', 'viewer'] as const) {
    const email = `${role}-svc@example.com`;
    const me = p.api(await oidc.sign(email));
    const home = await me.post('/api/v1/workspaces', { name: `home-${role}` });
    const key = await me.post(`/api/v1/workspaces/${home.body.id}/api-keys`, { name: 'ci' });
    expect((await owner.post(`/api/v1/workspaces/${ws}/members`, { email, role })).status).toBe(201);
    keys[role] = key.body.key;
  }
}, 60_000);

afterAll(async () => {
  await p?.stop();
  await oidc?.stop();
  if (p) await cleanVpcs(p.bootstrap.vpcId, ...extraVpcs);
}, 60_000);

describe("roles, as the spec's table says: reads for any member, writes for Owner and Admin", () => {
  it.each(['owner', 'admin', 'developer', 'viewer'] as const)('%s', async (role) => {
    const as = p.api(keys[role]);
    const writer = role === 'owner' || role === 'admin';
    // A service made by the owner, for the reads (and for the refused writes).
    const target = (await owner.post(base, { name: `roles-${role}`, image: TINY_HTTP })).body;
    const svc = `${base}/${target.id}`;

    expect((await as.get(base)).status).toBe(200);
    expect((await as.get(svc)).status).toBe(200);
    expect((await as.get(`${svc}/deployments`)).status).toBe(200);
    expect((await as.get(`${svc}/env`)).status).toBe(200);

    const writes: [string, () => Promise<{ status: number; body: any }>, number][] = [
      ['create', () => as.post(base, { name: `made-by-${role}`, image: TINY_HTTP }), 201],
      ['patch', () => as.patch(svc, { instance_type: 'svc.micro' }), 200],
      ['deploy', () => as.post(`${svc}/deploy`, { image_tag: '1' }), 202],
      ['restart', () => as.post(`${svc}/restart`), 202],
      ['rollback', () => as.post(`${svc}/rollback`, { deployment_id: target.current_deployment_id }), 202],
      [
        'put env',
        () =>
          as.put(`${svc}/env`, {
            variables: [
              { key: 'A', value: '1' },
              { key: 'B', value: '2' },
            ],
          }),
        200,
      ],
    ];
    for (const [what, call, ok] of writes) {
      const res = await call();
      expect(res.status, what).toBe(writer ? ok : 403);
      if (!writer) expect(res.body, what).toEqual(FORBIDDEN);
    }
    const env = (await as.get(`${svc}/env`)).body.variables;
    if (writer) {
      const del = await as.delete(`${svc}/env/${env[0].id}`);
      expect(del.status).toBe(204);
    } else {
      const del = await as.delete(`${svc}/env/00000000-0000-4000-8000-000000000000`);
      expect(del.status).toBe(403);
    }
    const gone = await as.delete(svc);
    expect(gone.status).toBe(writer ? 202 : 403);
    if (writer) expect(gone.body.status).toBe('deleting');
  });
});

describe('create: every field, its default and its rule', () => {
  it("applies the spec's defaults", async () => {
    const res = await owner.post(base, { name: 'defaults' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'defaults',
      service_type: 'web',
      instance_type: 'svc.nano',
      deployment_mode: 'always_on',
      port: 8080,
      min_replicas: 1,
      max_replicas: null,
      run_as_user: 1000,
      image: null,
      status: 'creating',
    });
    const worker = await owner.post(base, { name: 'defaults-worker', service_type: 'worker' });
    expect(worker.body.port).toBeNull();
    const scaled = await owner.post(base, { name: 'defaults-ondemand', deployment_mode: 'on_demand', min_replicas: 0 });
    expect(scaled.body).toMatchObject({ min_replicas: 0, deployment_mode: 'on_demand' });
  });

  it('refuses a duplicate name in the VPC with 409', async () => {
    const res = await owner.post(base, { name: 'defaults' });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'already_exists', error: expect.stringContaining('defaults') });
  });

  const rejected: [string, Record<string, unknown>, string][] = [
    ['no name', {}, 'name'],
    ['a name that is not a DNS label', { name: 'Not_A_Label' }, 'name'],
    ['a name over 50 characters', { name: 'a'.repeat(51) }, 'name'],
    ['an unknown service_type', { name: 'x', service_type: 'batch' }, 'service_type'],
    ['an unknown instance_type', { name: 'x', instance_type: 'svc.huge' }, 'instance_type'],
    ['an unknown deployment_mode', { name: 'x', deployment_mode: 'sometimes' }, 'deployment_mode'],
    ['an image that is no reference', { name: 'x', image: 'Not An Image!' }, 'image'],
    ['a port out of range', { name: 'x', port: 70000 }, 'port'],
    ['a port that is a string', { name: 'x', port: '8080' }, 'port'],
    ['a port on a worker', { name: 'x', service_type: 'worker', port: 8080 }, 'port'],
    ['a health path that is not a path', { name: 'x', health_check_path: 'healthz' }, 'health_check_path'],
    ['a health path on a worker', { name: 'x', service_type: 'worker', health_check_path: '/healthz' }, 'health_check_path'],
    ['negative min_replicas', { name: 'x', min_replicas: -1 }, 'min_replicas'],
    ['min_replicas 0 while always_on', { name: 'x', min_replicas: 0 }, 'min_replicas'],
    ['max_replicas below min_replicas', { name: 'x', min_replicas: 3, max_replicas: 2 }, 'max_replicas'],
    ['a cron service without cron_schedule', { name: 'x', service_type: 'cron' }, 'cron_schedule'],
    ['a cron_schedule that does not parse', { name: 'x', service_type: 'cron', cron_schedule: 'every minute' }, 'cron_schedule'],
    ['a cron_schedule with a seconds field', { name: 'x', service_type: 'cron', cron_schedule: '*/5 * * * * *' }, 'cron_schedule'],
    ['a cron_schedule on a web service', { name: 'x', cron_schedule: '* * * * *' }, 'cron_schedule'],
    ['max_replicas on a cron service', { name: 'x', service_type: 'cron', cron_schedule: '@hourly', max_replicas: 2 }, 'max_replicas'],
    ['on_demand for a worker', { name: 'x', service_type: 'worker', deployment_mode: 'on_demand' }, 'deployment_mode'],
    ['disk_size_gb without disk_mount_path', { name: 'x', disk_size_gb: 5 }, 'disk_mount_path'],
    ['disk_mount_path without disk_size_gb', { name: 'x', disk_mount_path: '/data' }, 'disk_size_gb'],
    ['a relative disk_mount_path', { name: 'x', disk_size_gb: 5, disk_mount_path: 'data' }, 'disk_mount_path'],
    ['a disk on several replicas', { name: 'x', disk_size_gb: 5, disk_mount_path: '/data', min_replicas: 2 }, 'min_replicas'],
    ['a command that is a string', { name: 'x', command: 'ls -l' }, 'command'],
    ['an empty command', { name: 'x', command: [] }, 'command'],
    ['args that are not strings', { name: 'x', args: ['-v', 2] }, 'args.1'],
    ['a negative run_as_user', { name: 'x', run_as_user: -1 }, 'run_as_user'],
    ['a run_as_user that is not an integer', { name: 'x', run_as_user: 'root' }, 'run_as_user'],
  ];
  it.each(rejected)('400 for %s, naming the field', async (_what, body, field) => {
    const res = await owner.post(base, body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: expect.any(String), error: expect.stringContaining(field) });
    expect(res.body.field).toBe(field);
  });

  it('400 for an unknown field, a malformed body, a bad limit or cursor; 404 for an unknown id', async () => {
    const unknown = await owner.post(base, { name: 'x', replicas: 3 });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatch(/replicas/);
    expect((await owner.post(base, undefined, { rawBody: '{"name":' })).status).toBe(400);
    expect((await owner.get(`${base}?limit=0`)).body).toMatchObject({ field: 'limit' });
    expect((await owner.get(`${base}?limit=201`)).status).toBe(400);
    expect((await owner.get(`${base}?cursor=nonsense`)).body).toMatchObject({ code: 'invalid_cursor' });
    const missing = await owner.get(`${base}/00000000-0000-4000-8000-000000000000`);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: 'service not found', code: 'service_not_found' });
    expect((await owner.get(`${base}/not-a-uuid`)).status).toBe(404);
    expect((await owner.post(`${base}/not-a-uuid/deploy`, { image_tag: 'v1' })).status).toBe(404);
  });

  it('pages lists with limit and cursor', async () => {
    for (const name of ['page-a', 'page-b', 'page-c']) expect((await owner.post(base, { name })).status).toBe(201);
    const first = await owner.get(`${base}?limit=2`);
    expect(first.body.items).toHaveLength(2);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const seen = [...first.body.items];
    let cursor = first.body.next_cursor;
    while (cursor) {
      const next = await owner.get(`${base}?limit=2&cursor=${cursor}`);
      seen.push(...next.body.items);
      cursor = next.body.next_cursor;
    }
    const all = (await owner.get(`${base}?limit=200`)).body.items;
    expect(seen.map((s) => s.id)).toEqual(all.map((s: any) => s.id));
  });
});

describe('deploy, live status and secrets, end to end', () => {
  it('deploys the tiny HTTP image to running; lists in one cluster call; a secret reference reaches the container', async () => {
    const created = await owner.post(base, { name: 'shop', image: TINY_HTTP, health_check_path: '/healthz' });
    expect(created.status).toBe(201);
    const svc = `${base}/${created.body.id}`;
    await waitForStatus(owner, svc, 'running');

    const list = await owner.get(base);
    expect(list.headers.get('x-pier-cluster-calls')).toBe('1');
    expect(list.body.items.find((s: any) => s.id === created.body.id).status).toBe('running');

    const secretsBase = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/secrets`;
    const secret = await owner.post(secretsBase, { name: 'shop-db', values: { PASSWORD: 'hunter2-e2e' } });
    expect(secret.status).toBe(201);
    const put = await owner.put(`${svc}/env`, { variables: [{ key: 'DB_PASSWORD', secret_id: secret.body.id, secret_key: 'PASSWORD' }] });
    expect(put.status).toBe(200);
    expect(JSON.stringify(put.body)).not.toContain('hunter2-e2e');
    await waitForStatus(owner, svc, 'running');
    const [container] = await containersOf(created.body.id);
    expect((await inspect(container!)).Config.Env).toContain('DB_PASSWORD=hunter2-e2e');
    expect(JSON.stringify((await owner.get(`${svc}/env`)).body)).not.toContain('hunter2-e2e');

    const bad = await owner.put(`${svc}/env`, { variables: [{ key: 'X', secret_id: secret.body.id, secret_key: 'MISSING' }] });
    expect(bad.status).toBe(400);
    expect(bad.body.field).toBe('variables.0.secret_key');

    expect((await owner.delete(`${secretsBase}/${secret.body.id}`)).status).toBe(204);
    const restarted = await owner.post(`${svc}/restart`);
    expect(restarted.status).toBe(202);
    expect(restarted.body.deployment).toMatchObject({ status: 'failed', message: expect.stringMatching(/missing secret/) });
    const crashed = await owner.get(svc);
    expect(crashed.body).toMatchObject({ status: 'crashed', status_message: expect.stringMatching(/missing secret/) });
  });

  it('keeps auth from deleting a VPC that still holds a service', async () => {
    const ws = p.bootstrap.workspaceId;
    const vpc = await owner.post(`/api/v1/workspaces/${ws}/vpcs`, { name: 'busy' });
    expect(vpc.status).toBe(201);
    extraVpcs.push(vpc.body.id);
    const inVpc = `/api/v1/workspaces/${ws}/vpcs/${vpc.body.id}/services`;
    const svc = await owner.post(inVpc, { name: 'tenant', image: TINY_HTTP });
    expect(svc.status).toBe(201);
    const refused = await owner.delete(`/api/v1/workspaces/${ws}/vpcs/${vpc.body.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('vpc_not_empty');
    expect((await owner.delete(`${inVpc}/${svc.body.id}`)).status).toBe(202);
    await waitForStatus(owner, `${inVpc}/${svc.body.id}`, 'deleted');
    expect((await owner.delete(`/api/v1/workspaces/${ws}/vpcs/${vpc.body.id}`)).status).toBe(204);
  });
});
