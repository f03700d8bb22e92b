// The databases endpoints' roles, through the gateway with each member's own API key:
// any member reads (connection, slow queries and backups included, Viewers too); schema,
// query and every write (backups, restore, fork, replicas included) need Owner or Admin.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';
import { startOidcProvider, type OidcProvider } from '../support/oidc.ts';
import { memberKey } from '../support/members.ts';
import { DATABASES_ENV, cleanupVpc, waitForStatus } from './databases-helpers.ts';

const FORBIDDEN = { error: 'insufficient workspace permissions', code: expect.any(String) };
type Role = 'owner' | 'admin' | 'developer' | 'viewer';

let p: Platform;
let oidc: OidcProvider;
let base: string;
let one: string;
const keys = {} as Record<Role, string>;

beforeAll(async () => {
  oidc = await startOidcProvider();
  p = await startPlatform({ env: { auth: oidc.env, databases: DATABASES_ENV } });
  const ws = p.bootstrap.workspaceId;
  const owner = p.api(p.bootstrap.token);
  keys.owner = p.bootstrap.token;
  for (const role of ['admin', 'developer', 'viewer'] as const) keys[role] = await memberKey(p, oidc, `${role}@example.com`, role);
  base = `/api/v1/workspaces/${ws}/vpcs/${p.bootstrap.vpcId}/databases`;
  const db = await owner.post(base, { name: 'roles' });
  expect(db.status).toBe(202);
  one = `${base}/${db.body.id}`;
  await waitForStatus(owner, one, 'running');
});

afterAll(async () => {
  await p?.stop();
  await oidc?.stop();
  if (p) await cleanupVpc(p.bootstrap.vpcId);
});

const as = (role: Role): Api => p.api(keys[role]);

describe('reads: any member, Viewers included', () => {
  it.each(['owner', 'admin', 'developer', 'viewer'] as const)('%s lists, reads, gets the connection (live password) and slow queries', async (role) => {
    const api = as(role);
    expect((await api.get(base)).status).toBe(200);
    expect((await api.get(one)).status).toBe(200);
    const conn = await api.get(`${one}/connection`);
    expect(conn.status).toBe(200);
    expect(conn.body.password).toMatch(/^[0-9a-f]{48}$/);
    expect((await api.get(`${one}/slow-queries`)).status).toBe(200);
    expect((await api.get(`${one}/ip-allowlist`)).status).toBe(200);
    const backups = await api.get(`${one}/backups`);
    expect(backups.status).toBe(200);
    expect(backups.body).toEqual({ items: [], next_cursor: null, recovery_window: null });
  });
});

describe('Owner or Admin only', () => {
  const matrix = [
    ['owner', true],
    ['admin', true],
    ['developer', false],
    ['viewer', false],
  ] as const;

  it.each(matrix)('%s: schema, query and writes allowed = %s', async (role, allowed) => {
    const api = as(role);
    const checks: [string, Promise<{ status: number; body: unknown }>, number][] = [
      ['schema', api.get(`${one}/schema`), 200],
      ['query', api.post(`${one}/query`, { sql: 'select 1' }), 200],
      ['slow-queries reset', api.post(`${one}/slow-queries/reset`), 204],
      // Writes with a body that fails validation: passing the role check shows as 400/404.
      ['provision', api.post(base, { name: 'Not Valid' }), 400],
      ['patch', api.patch(one, {}), 400],
      ['delete', api.delete(`${base}/00000000-0000-4000-8000-000000000000`), 404],
      ['allowlist add', api.post(`${one}/ip-allowlist`, { cidr: 'nope' }), 400],
      ['allowlist remove', api.delete(`${one}/ip-allowlist/00000000-0000-4000-8000-000000000000`), 404],
      ['backup', api.post(`${one}/backups`, { unknown: 1 }), 400],
      ['restore', api.post(`${one}/backups/restore`, { name: 'Not Valid' }), 400],
      ['schedule', api.patch(`${one}/backups/schedule`, { retention_count: 0 }), 400],
      ['backup delete', api.delete(`${one}/backups/19990101-000000`), 404],
      ['fork', api.post(`${one}/fork`, { name: 'Not Valid' }), 400],
      ['replicas', api.patch(`${one}/replicas`, { replicas: -1 }), 400],
    ];
    for (const [what, pending, ok] of checks) {
      const res = await pending;
      if (allowed) expect(res.status, what).toBe(ok);
      else {
        expect(res.status, what).toBe(403);
        expect(res.body, what).toEqual(FORBIDDEN);
      }
    }
  });
});
