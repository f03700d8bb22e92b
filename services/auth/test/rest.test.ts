import { createHash } from 'node:crypto';
import type http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import request from 'supertest';
import { close, createLogger, createServiceApp, generateIdentityKeys, IdentityVerifier, listen, vpcUsageRoute, type Role } from '@pier/kit';
import { startAuth, type AuthHarness, type RequestAs } from './harness.ts';

// The REST API of auth through supertest, with identity tokens minted as the gateway's
// would be. VPC deletion asks two resource services for usage: both are kit's real
// `vpcUsageRoute` behind `createServiceApp` (so auth's service token is verified for
// real); only the counts they report are set by the test.

const NIL = '00000000-0000-4000-8000-000000000000';

let h: AuthHarness;
let admin: pg.Client;
let ws: string;
let vpc: string;
const ids: Record<Role, string> = { owner: '', admin: '', developer: '', viewer: '' };
const as: Record<Role, RequestAs> = {} as Record<Role, RequestAs>;
const usage = new Map<string, number>();
let computeUsage: http.Server;
let databasesUsage: http.Server;

async function usageService(publicJwk: string): Promise<{ server: http.Server; url: string }> {
  const app = createServiceApp({
    service: 'usage-test',
    logger: createLogger('usage-test', 'silent'),
    verifier: await IdentityVerifier.fromJwk(publicJwk),
    routes: [vpcUsageRoute(async (id) => usage.get(id) ?? 0)],
  });
  const { server, port } = await listen(app, 0);
  return { server, url: `http://127.0.0.1:${port}` };
}

function expectError(res: request.Response, status: number, code?: string, mentions?: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(typeof res.body.error).toBe('string');
  expect(typeof res.body.code).toBe('string');
  if (code) expect(res.body.code).toBe(code);
  if (mentions) expect(res.body.error).toContain(mentions);
}

beforeAll(async () => {
  // Keys first, so the usage services verify with the same public key auth signs with.
  const keys = await generateIdentityKeys();
  const compute = await usageService(keys.publicJwk);
  const databases = await usageService(keys.publicJwk);
  computeUsage = compute.server;
  databasesUsage = databases.server;
  h = await startAuth({
    PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
    PIER_IDENTITY_PRIVATE_KEY: keys.privateJwk,
    PIER_COMPUTE_URL: compute.url,
    PIER_DATABASES_URL: databases.url,
  });
  ws = h.running.bootstrap!.workspaceId;
  vpc = h.running.bootstrap!.vpcId;
  ids.owner = h.running.bootstrap!.userId;
  as.owner = await h.as({ subject: ids.owner, workspaceId: ws, role: 'owner' });
  for (const role of ['admin', 'developer', 'viewer'] as const) {
    const res = await as.owner
      .post(`/api/v1/workspaces/${ws}/members`)
      .send({ email: `${role}@example.com`, role })
      .expect(201);
    expect(res.body).toMatchObject({ email: `${role}@example.com`, role });
    ids[role] = res.body.user_id;
    as[role] = await h.as({ subject: ids[role], workspaceId: ws, role });
  }
  admin = new pg.Client({ connectionString: h.db.adminUrl });
  await admin.connect();
});

afterAll(async () => {
  await admin?.end();
  await h?.stop();
  if (computeUsage) await close(computeUsage);
  if (databasesUsage?.listening) await close(databasesUsage);
});

describe('role matrix', () => {
  const roles: Role[] = ['owner', 'admin', 'developer', 'viewer'];

  it('lets every member read the workspace, its members and its VPCs', async () => {
    for (const role of roles) {
      expect((await as[role].get(`/api/v1/workspaces/${ws}`).expect(200)).body).toMatchObject({ id: ws, name: 'default', role });
      expect((await as[role].get(`/api/v1/workspaces/${ws}/members`).expect(200)).body.items).toHaveLength(4);
      expect((await as[role].get(`/api/v1/workspaces/${ws}/vpcs`).expect(200)).body.items[0]).toMatchObject({ id: vpc, name: 'default' });
      const vpcAs = await h.as({ subject: ids[role], workspaceId: ws, vpcId: vpc, role });
      expect((await vpcAs.get(`/api/v1/workspaces/${ws}/vpcs/${vpc}`).expect(200)).body).toMatchObject({ id: vpc, workspace_id: ws });
    }
  });

  it('keeps API keys to Owner and Admin: a Developer cannot even list them', async () => {
    for (const role of roles) {
      const list = await as[role].get(`/api/v1/workspaces/${ws}/api-keys`);
      const create = await as[role].post(`/api/v1/workspaces/${ws}/api-keys`).send({ name: `by-${role}` });
      if (role === 'owner' || role === 'admin') {
        expect(list.status).toBe(200);
        expect(create.status).toBe(201);
      } else {
        for (const res of [list, create]) expectError(res, 403, 'forbidden', 'insufficient workspace permissions');
      }
    }
    const keyId = (await as.owner.get(`/api/v1/workspaces/${ws}/api-keys`)).body.items.find((k: { name: string }) => k.name === 'by-owner').id;
    for (const role of ['developer', 'viewer'] as const) {
      expectError(await as[role].delete(`/api/v1/workspaces/${ws}/api-keys/${keyId}`), 403, 'forbidden');
    }
    const names = (await as.owner.get(`/api/v1/workspaces/${ws}/api-keys`)).body.items.map((k: { name: string }) => k.name);
    expect(names).toEqual(expect.arrayContaining(['bootstrap', 'by-owner', 'by-admin']));
    expect(names).not.toContain('by-developer');
    expect(names).not.toContain('by-viewer');
  });

  it('refuses VPC and member writes below Admin, and writes nothing', async () => {
    for (const role of ['developer', 'viewer'] as const) {
      expectError(await as[role].post(`/api/v1/workspaces/${ws}/vpcs`).send({ name: `vpc-${role}` }), 403, 'forbidden', 'insufficient workspace permissions');
      expectError(await as[role].post(`/api/v1/workspaces/${ws}/members`).send({ email: `new-${role}@example.com`, role: 'viewer' }), 403);
      expectError(await as[role].patch(`/api/v1/workspaces/${ws}/members/${ids.viewer}`).send({ role: 'admin' }), 403);
      expectError(await as[role].delete(`/api/v1/workspaces/${ws}/members/${ids.viewer}`), 403);
      const vpcAs = await h.as({ subject: ids[role], workspaceId: ws, vpcId: vpc, role });
      expectError(await vpcAs.delete(`/api/v1/workspaces/${ws}/vpcs/${vpc}`), 403);
    }
    const counts = await admin.query(`select (select count(*) from auth.vpcs)::int as vpcs, (select count(*) from auth.memberships)::int as members`);
    expect(counts.rows[0]).toEqual({ vpcs: 1, members: 4 });
    for (const role of ['owner', 'admin'] as const) {
      await as[role]
        .post(`/api/v1/workspaces/${ws}/vpcs`)
        .send({ name: `vpc-${role}` })
        .expect(201);
    }
  });

  it('refuses a token minted for another workspace, a service identity, or none', async () => {
    const other = await h.as({ subject: ids.owner, workspaceId: NIL, role: 'owner' });
    expectError(await other.get(`/api/v1/workspaces/${ws}`), 403);
    const service = await h.as({ subject: 'compute', kind: 'service' });
    expectError(await service.get('/api/v1/workspaces'), 403);
    expectError(await request(h.url).get('/api/v1/workspaces'), 401);
  });
});

describe('API keys', () => {
  it('creates sk- + 64 hex, shows it once, stores only its SHA-256', async () => {
    const before = Date.now();
    const res = await as.admin
      .post(`/api/v1/workspaces/${ws}/api-keys`)
      .send({ name: 'deploy bot', expires_in_days: 30, scopes: ['services:write', 'read'] })
      .expect(201);
    const k = res.body;
    expect(k.key).toMatch(/^sk-[0-9a-f]{64}$/);
    expect(k.key_prefix).toBe(k.key.slice(0, 12));
    expect(Object.keys(k).sort()).toEqual(['created_at', 'expires_at', 'id', 'key', 'key_prefix', 'last_used_at', 'name', 'scopes', 'workspace_id']);
    expect(k).toMatchObject({ workspace_id: ws, name: 'deploy bot', scopes: ['services:write', 'read'], last_used_at: null });
    const expires = Date.parse(k.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 30 * 86_400_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 30 * 86_400_000 + 1000);

    const listed = (await as.owner.get(`/api/v1/workspaces/${ws}/api-keys`).expect(200)).body.items.find((x: { id: string }) => x.id === k.id);
    const { key: _key, ...withoutKey } = k;
    expect(listed).toEqual(withoutKey);

    const row = (await admin.query(`select * from auth.api_keys where id = $1`, [k.id])).rows[0];
    expect(row.key_hash).toBe(createHash('sha256').update(k.key).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(k.key);
    const dump = await admin.query(`select string_agg(t::text, ' ') as all from auth.api_keys t`);
    expect(dump.rows[0].all).not.toContain(k.key.slice(3));

    const noExpiry = (await as.owner.post(`/api/v1/workspaces/${ws}/api-keys`).send({ name: 'forever' }).expect(201)).body;
    expect(noExpiry.expires_at).toBeNull();
    expect(noExpiry.scopes).toEqual([]);
  });

  it('keeps names unique per workspace (409), frees a revoked name, and revokes once', async () => {
    const first = (await as.owner.post(`/api/v1/workspaces/${ws}/api-keys`).send({ name: 'ci' }).expect(201)).body;
    expectError(await as.admin.post(`/api/v1/workspaces/${ws}/api-keys`).send({ name: 'ci' }), 409, 'already_exists', 'ci');
    const revoke = await as.owner.delete(`/api/v1/workspaces/${ws}/api-keys/${first.id}`).expect(204);
    expect(revoke.text).toBe('');
    expect(revoke.headers['content-type']).toBeUndefined();
    expectError(await as.owner.delete(`/api/v1/workspaces/${ws}/api-keys/${first.id}`), 404, 'api_key_not_found');
    const listed = (await as.owner.get(`/api/v1/workspaces/${ws}/api-keys`)).body.items.map((x: { id: string }) => x.id);
    expect(listed).not.toContain(first.id);
    await as.owner.post(`/api/v1/workspaces/${ws}/api-keys`).send({ name: 'ci' }).expect(201);
    // Another workspace may use the same name.
    const other = (await (await h.as({ subject: ids.developer })).post('/api/v1/workspaces').send({ name: 'dev-space' }).expect(201)).body;
    const devOwner = await h.as({ subject: ids.developer, workspaceId: other.id, role: 'owner' });
    await devOwner.post(`/api/v1/workspaces/${other.id}/api-keys`).send({ name: 'ci' }).expect(201);
    // A key id of another workspace is not found here.
    const foreignKey = (await devOwner.get(`/api/v1/workspaces/${other.id}/api-keys`)).body.items[0].id;
    expectError(await as.owner.delete(`/api/v1/workspaces/${ws}/api-keys/${foreignKey}`), 404, 'api_key_not_found');
  });
});

describe('bad input', () => {
  const keys = () => `/api/v1/workspaces/${ws}/api-keys`;

  it('answers malformed JSON and non-JSON bodies with 400', async () => {
    expectError(await as.owner.post(keys()).set('content-type', 'application/json').send('{"name":'), 400, 'malformed_json');
    expectError(await as.owner.post(keys()).set('content-type', 'text/plain').send('name=x'), 400, 'invalid_request');
    expectError(await as.owner.post(keys()), 400);
    expectError(await as.owner.post(keys()).send([{ name: 'x' }]), 400, 'invalid_request', 'JSON object');
    expectError(await as.owner.post(keys()).set('content-type', 'application/json').send('null'), 400);
  });

  it('names the field for wrong types, missing fields and unknown fields', async () => {
    expectError(await as.owner.post(keys()).send({ name: 5 }), 400, 'invalid_request', 'name: must be a string');
    expectError(await as.owner.post(keys()).send({}), 400, 'invalid_request', 'name: is required');
    expectError(await as.owner.post(keys()).send({ name: 'x', colour: 'red' }), 400, 'invalid_request', 'colour');
    expectError(await as.owner.post(keys()).send({ name: 'x', scopes: 'read' }), 400, 'invalid_request', 'scopes');
    expectError(await as.owner.post(keys()).send({ name: 'x', scopes: [1] }), 400, 'invalid_request', 'scopes.0');
    const res = await as.owner.post(keys()).send({ name: 5 });
    expect(res.body.field).toBe('name');
  });

  it('refuses empty, too long and badly formed names', async () => {
    for (const name of ['', 'x'.repeat(64), ' leading', 'line\nbreak']) {
      expectError(await as.owner.post(keys()).send({ name }), 400, 'invalid_request', 'name');
    }
    await as.owner
      .post(keys())
      .send({ name: 'x'.repeat(63) })
      .expect(201);
    for (const name of ['', 'x'.repeat(64), 'Upper', 'under_score', '-dash', 'dash-']) {
      expectError(await as.owner.post(`/api/v1/workspaces/${ws}/vpcs`).send({ name }), 400, 'invalid_request', 'name');
      expectError(await (await h.as({ subject: ids.owner })).post('/api/v1/workspaces').send({ name }), 400, 'invalid_request', 'name');
    }
    expectError(await as.owner.post(`/api/v1/workspaces/${ws}/vpcs`).send({ name: 'default' }), 409, 'already_exists');
  });

  it('accepts only a positive integer for expires_in_days', async () => {
    for (const expires_in_days of [0, -3, 1.5, '30', null, true, 3651]) {
      expectError(await as.owner.post(keys()).send({ name: 'exp', expires_in_days }), 400, 'invalid_request', 'expires_in_days');
      expectError(await (await h.as({ subject: ids.owner })).post('/api/v1/cli-sessions').send({ expires_in_days }), 400, 'invalid_request', 'expires_in_days');
    }
  });

  it('refuses unknown roles and e-mails that are not e-mails', async () => {
    const members = `/api/v1/workspaces/${ws}/members`;
    expectError(
      await as.owner.post(members).send({ email: 'z@example.com', role: 'superuser' }),
      400,
      'invalid_request',
      'role: must be one of owner, admin, developer, viewer',
    );
    expectError(await as.owner.post(members).send({ email: 'z@example.com' }), 400, 'invalid_request', 'role: is required');
    expectError(await as.owner.post(members).send({ email: 'not-an-email', role: 'viewer' }), 400, 'invalid_request', 'email');
    expectError(await as.owner.patch(`${members}/${ids.viewer}`).send({ role: 'root' }), 400, 'invalid_request', 'role');
    expectError(await as.owner.patch(`${members}/${ids.viewer}`).send({}), 400, 'invalid_request', 'role');
  });

  it('answers unknown and malformed ids with 404 and a code', async () => {
    expectError(await as.owner.delete(`${keys()}/${NIL}`), 404, 'api_key_not_found', 'API key not found');
    expectError(await as.owner.delete(`${keys()}/not-a-uuid`), 404, 'api_key_not_found');
    expectError(await as.owner.patch(`/api/v1/workspaces/${ws}/members/${NIL}`).send({ role: 'viewer' }), 404, 'member_not_found');
    expectError(await as.owner.delete(`/api/v1/workspaces/${ws}/members/42`), 404, 'member_not_found');
    for (const vpcId of [NIL, 'nope']) {
      const vpcAs = await h.as({ subject: ids.owner, workspaceId: ws, vpcId, role: 'owner' });
      expectError(await vpcAs.get(`/api/v1/workspaces/${ws}/vpcs/${vpcId}`), 404, 'vpc_not_found');
      expectError(await vpcAs.delete(`/api/v1/workspaces/${ws}/vpcs/${vpcId}`), 404, 'vpc_not_found');
    }
    const me = await h.as({ subject: ids.owner });
    expectError(await me.delete(`/api/v1/cli-sessions/${NIL}`), 404, 'cli_session_not_found');
    expectError(await me.delete('/api/v1/cli-sessions/x'), 404, 'cli_session_not_found');
    const nobody = await h.as({ subject: ids.owner, workspaceId: 'not-a-uuid', role: 'owner' });
    expectError(await nobody.get('/api/v1/workspaces/not-a-uuid'), 404, 'workspace_not_found');
    expectError(await nobody.get('/api/v1/workspaces/not-a-uuid/members'), 404, 'workspace_not_found');
    expectError(await as.owner.get('/api/v1/nothing-here'), 404, 'route_not_found');
  });

  it('checks limit and cursor', async () => {
    for (const q of ['limit=0', 'limit=201', 'limit=abc', 'limit=1.5', 'cursor=garbage', 'cursor=']) {
      expectError(await as.owner.get(`/api/v1/workspaces/${ws}/vpcs?${q}`), 400, undefined, q.split('=')[0]);
    }
  });
});

describe('pagination', () => {
  it('walks a list page by page with next_cursor', async () => {
    for (const n of [1, 2, 3, 4, 5])
      await as.owner
        .post(`/api/v1/workspaces/${ws}/vpcs`)
        .send({ name: `page-${n}` })
        .expect(201);
    const all = (await as.owner.get(`/api/v1/workspaces/${ws}/vpcs?limit=200`).expect(200)).body;
    expect(all.next_cursor).toBeNull();
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { items: { id: string }[]; next_cursor: string | null } = (
        await as.owner
          .get(`/api/v1/workspaces/${ws}/vpcs`)
          .query(cursor ? { limit: 2, cursor } : { limit: 2 })
          .expect(200)
      ).body;
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((v) => v.id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual(all.items.map((v: { id: string }) => v.id));
  });
});

describe('members', () => {
  it('keeps the last owner, and leaves the owner role to owners', async () => {
    const members = `/api/v1/workspaces/${ws}/members`;
    expectError(await as.owner.delete(`${members}/${ids.owner}`), 409, 'last_owner', 'last owner');
    expectError(await as.owner.patch(`${members}/${ids.owner}`).send({ role: 'admin' }), 409, 'last_owner', 'last owner');
    expectError(await as.admin.patch(`${members}/${ids.viewer}`).send({ role: 'owner' }), 403, 'owner_required');
    expectError(await as.admin.patch(`${members}/${ids.owner}`).send({ role: 'viewer' }), 403, 'owner_required');
    expectError(await as.admin.post(members).send({ email: 'boss@example.com', role: 'owner' }), 403, 'owner_required');
    expectError(await as.admin.post(members).send({ email: 'developer@example.com', role: 'viewer' }), 409, 'already_exists');

    // An admin manages the roles below owner.
    expect((await as.admin.patch(`${members}/${ids.viewer}`).send({ role: 'developer' }).expect(200)).body.role).toBe('developer');
    await as.admin.patch(`${members}/${ids.viewer}`).send({ role: 'viewer' }).expect(200);

    // With a second owner, the first may step down.
    await as.owner.patch(`${members}/${ids.admin}`).send({ role: 'owner' }).expect(200);
    await as.owner.patch(`${members}/${ids.owner}`).send({ role: 'admin' }).expect(200);
    const newOwner = await h.as({ subject: ids.admin, workspaceId: ws, role: 'owner' });
    await newOwner.patch(`${members}/${ids.owner}`).send({ role: 'owner' }).expect(200);
    await as.owner.patch(`${members}/${ids.admin}`).send({ role: 'admin' }).expect(200);

    const added = (await as.admin.post(members).send({ email: 'New.Person@Example.com', role: 'viewer' }).expect(201)).body;
    expect(added.email).toBe('new.person@example.com');
    await as.admin.delete(`${members}/${added.user_id}`).expect(204);
    expectError(await as.admin.delete(`${members}/${added.user_id}`), 404, 'member_not_found');
  });
});

describe('workspaces and VPCs', () => {
  it('lists my workspaces with my role; a new one gets a default VPC and me as owner', async () => {
    const viewer = await h.as({ subject: ids.viewer });
    const created = (await viewer.post('/api/v1/workspaces').send({ name: 'viewers-own' }).expect(201)).body;
    expect(created).toMatchObject({ name: 'viewers-own', role: 'owner' });
    const mine = (await viewer.get('/api/v1/workspaces').expect(200)).body.items;
    expect(mine.map((w: { id: string; role: string }) => [w.id, w.role])).toEqual([
      [ws, 'viewer'],
      [created.id, 'owner'],
    ]);
    const inNew = await h.as({ subject: ids.viewer, workspaceId: created.id, role: 'owner' });
    const vpcs = (await inNew.get(`/api/v1/workspaces/${created.id}/vpcs`).expect(200)).body.items;
    expect(vpcs).toEqual([expect.objectContaining({ id: created.default_vpc_id, name: 'default' })]);
  });

  it('deletes a VPC only when every resource service reports it empty', async () => {
    const v = (await as.owner.post(`/api/v1/workspaces/${ws}/vpcs`).send({ name: 'doomed' }).expect(201)).body;
    const inVpc = await h.as({ subject: ids.admin, workspaceId: ws, vpcId: v.id, role: 'admin' });
    usage.set(v.id, 2);
    expectError(await inVpc.delete(`/api/v1/workspaces/${ws}/vpcs/${v.id}`), 409, 'vpc_not_empty', '2 compute resources');
    usage.delete(v.id);
    await inVpc.delete(`/api/v1/workspaces/${ws}/vpcs/${v.id}`).expect(204);
    expectError(await inVpc.get(`/api/v1/workspaces/${ws}/vpcs/${v.id}`), 404, 'vpc_not_found');

    const kept = (await as.owner.post(`/api/v1/workspaces/${ws}/vpcs`).send({ name: 'kept' }).expect(201)).body;
    await close(databasesUsage);
    const inKept = await h.as({ subject: ids.admin, workspaceId: ws, vpcId: kept.id, role: 'admin' });
    expectError(await inKept.delete(`/api/v1/workspaces/${ws}/vpcs/${kept.id}`), 503, 'upstream_unavailable', 'databases');
    await inKept.get(`/api/v1/workspaces/${ws}/vpcs/${kept.id}`).expect(200);
  });
});

describe('CLI sessions', () => {
  it("are the caller's own: create returns the token once, list and revoke", async () => {
    const dev = await h.as({ subject: ids.developer });
    const s = (await dev.post('/api/v1/cli-sessions').send({ name: 'work laptop', expires_in_days: 7 }).expect(201)).body;
    expect(s.token).toMatch(/^[0-9a-f]{64}$/);
    expect(Date.parse(s.expires_at) - Date.parse(s.created_at)).toBe(7 * 86_400_000);
    const d = (await dev.post('/api/v1/cli-sessions').send({}).expect(201)).body;
    expect(Date.parse(d.expires_at) - Date.parse(d.created_at)).toBe(30 * 86_400_000);
    expect(d.name).toBeNull();
    const list = (await dev.get('/api/v1/cli-sessions').expect(200)).body.items;
    expect(list.map((x: { id: string }) => x.id)).toEqual([s.id, d.id]);
    expect(list[0].token).toBeUndefined();
    const other = await h.as({ subject: ids.viewer });
    expect((await other.get('/api/v1/cli-sessions').expect(200)).body.items).toEqual([]);
    expectError(await other.delete(`/api/v1/cli-sessions/${s.id}`), 404, 'cli_session_not_found');
    await dev.delete(`/api/v1/cli-sessions/${s.id}`).expect(204);
    expect((await dev.get('/api/v1/cli-sessions').expect(200)).body.items.map((x: { id: string }) => x.id)).toEqual([d.id]);
    const row = (await admin.query(`select token_hash from auth.cli_sessions where id = $1`, [d.id])).rows[0];
    expect(row.token_hash).toBe(createHash('sha256').update(d.token).digest('hex'));
  });
});

describe('OpenAPI', () => {
  it('documents every route from the same schemas', async () => {
    const paths = (await request(h.url).get('/internal/openapi').expect(200)).body;
    expect(Object.keys(paths).sort()).toEqual([
      '/api/v1/cli-sessions',
      '/api/v1/cli-sessions/{sessionID}',
      '/api/v1/me',
      '/api/v1/workspaces',
      '/api/v1/workspaces/{workspaceID}',
      '/api/v1/workspaces/{workspaceID}/api-keys',
      '/api/v1/workspaces/{workspaceID}/api-keys/{keyID}',
      '/api/v1/workspaces/{workspaceID}/members',
      '/api/v1/workspaces/{workspaceID}/members/{userID}',
      '/api/v1/workspaces/{workspaceID}/vpcs',
      '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}',
    ]);
    const create = paths['/api/v1/workspaces/{workspaceID}/api-keys'].post;
    expect(create.requestBody.content['application/json'].schema.properties.expires_in_days.type).toBe('integer');
    expect(create.requestBody.content['application/json'].schema.additionalProperties).toBe(false);
  });
});
