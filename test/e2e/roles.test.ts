// Roles through the gateway, the way a script holding an API key sees them: a key acts
// with its creator's role in each workspace at the time of each request, reaches every
// workspace the creator belongs to, and no other. People sign in with a dashboard JWT
// from a (local) OIDC provider, create their own workspace, and make their key there.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';
import { startOidcProvider, type OidcProvider } from '../support/oidc.ts';

const FORBIDDEN = { error: 'insufficient workspace permissions', code: expect.any(String) };

let p: Platform;
let oidc: OidcProvider;
let owner: Api;
let ws: string;

interface Person {
  email: string;
  userId: string;
  /** Their own workspace, where they are Owner and made their key. */
  home: string;
  key: string;
  jwt: string;
}

/** A user signed in by JWT, with a workspace and an API key of their own. */
async function person(email: string): Promise<Omit<Person, 'userId'>> {
  const jwt = await oidc.sign(email);
  const me = p.api(jwt);
  const created = await me.post('/api/v1/workspaces', { name: `home-${email.split('@')[0]}` });
  expect(created.status).toBe(201);
  const key = await me.post(`/api/v1/workspaces/${created.body.id}/api-keys`, { name: 'laptop' });
  expect(key.status).toBe(201);
  return { email, home: created.body.id, key: key.body.key, jwt };
}

/** Adds `email` to the bootstrap workspace with `role`; returns their user id. */
async function addMember(email: string, role: string): Promise<string> {
  const res = await owner.post(`/api/v1/workspaces/${ws}/members`, { email, role });
  expect(res.status).toBe(201);
  return res.body.user_id;
}

const people: Record<'owner' | 'admin' | 'developer' | 'viewer', Person> = {} as never;

beforeAll(async () => {
  oidc = await startOidcProvider();
  p = await startPlatform({ env: { auth: oidc.env } });
  owner = p.api(p.bootstrap.token);
  ws = p.bootstrap.workspaceId;
  people.owner = { email: p.bootstrap.email, userId: '', home: ws, key: p.bootstrap.token, jwt: '' };
  for (const role of ['admin', 'developer', 'viewer'] as const) {
    const someone = await person(`${role}@example.com`);
    people[role] = { ...someone, userId: await addMember(someone.email, role) };
  }
}, 60_000);

afterAll(async () => {
  await p?.stop();
  await oidc?.stop();
});

describe("the role matrix, with each role's own API key", () => {
  const matrix = [
    // role,        read keys, write keys, Admin write (create VPC), Member read (list VPCs)
    ['owner', 200, 201, 201, 200],
    ['admin', 200, 201, 201, 200],
    ['developer', 403, 403, 403, 200],
    ['viewer', 403, 403, 403, 200],
  ] as const;

  it.each(matrix)('%s: keys read %i, keys write %i, VPC create %i, VPC list %i', async (role, readKeys, writeKeys, adminWrite, memberRead) => {
    const as = p.api(people[role].key);
    const list = await as.get(`/api/v1/workspaces/${ws}/api-keys`);
    expect(list.status).toBe(readKeys);
    if (readKeys === 403) expect(list.body).toEqual(FORBIDDEN);
    else expect(list.body.items.every((k: Record<string, unknown>) => k.key === undefined && typeof k.key_prefix === 'string')).toBe(true);

    const create = await as.post(`/api/v1/workspaces/${ws}/api-keys`, { name: `by-${role}` });
    expect(create.status).toBe(writeKeys);
    if (writeKeys === 403) expect(create.body).toEqual(FORBIDDEN);
    else expect(create.body.key).toMatch(/^sk-[0-9a-f]{64}$/);

    const vpc = await as.post(`/api/v1/workspaces/${ws}/vpcs`, { name: `vpc-by-${role}` });
    expect(vpc.status).toBe(adminWrite);
    if (adminWrite === 403) expect(vpc.body).toEqual(FORBIDDEN);

    const vpcs = await as.get(`/api/v1/workspaces/${ws}/vpcs`);
    expect(vpcs.status).toBe(memberRead);
    expect(vpcs.body.items.map((v: { name: string }) => v.name)).toContain('default');
  });

  it('a refused write leaves nothing behind', async () => {
    const keys = await owner.get(`/api/v1/workspaces/${ws}/api-keys`);
    const names = keys.body.items.map((k: { name: string }) => k.name);
    expect(names).not.toContain('by-developer');
    expect(names).not.toContain('by-viewer');
  });
});

describe('role changes take effect on the next request', () => {
  it("a downgraded admin's key loses write access at once; a removed member's key stops working there", async () => {
    const shifty = await person('shifty@example.com');
    const userId = await addMember(shifty.email, 'admin');
    const key = p.api(shifty.key);

    expect((await key.post(`/api/v1/workspaces/${ws}/vpcs`, { name: 'while-admin' })).status).toBe(201);
    expect((await key.get(`/api/v1/workspaces/${ws}/api-keys`)).status).toBe(200);

    expect((await owner.patch(`/api/v1/workspaces/${ws}/members/${userId}`, { role: 'developer' })).status).toBe(200);
    const denied = await key.post(`/api/v1/workspaces/${ws}/vpcs`, { name: 'after-downgrade' });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual(FORBIDDEN);
    expect((await key.get(`/api/v1/workspaces/${ws}/api-keys`)).status).toBe(403);
    expect((await key.get(`/api/v1/workspaces/${ws}/vpcs`)).status).toBe(200);

    expect((await owner.delete(`/api/v1/workspaces/${ws}/members/${userId}`)).status).toBe(204);
    const gone = await key.get(`/api/v1/workspaces/${ws}/vpcs`);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ error: 'workspace not found', code: 'workspace_not_found' });
    const mine = await key.get('/api/v1/workspaces');
    expect(mine.body.items.map((w: { id: string }) => w.id)).toEqual([shifty.home]);
    // Still their key: it keeps working where they still belong.
    expect((await key.get(`/api/v1/workspaces/${shifty.home}/api-keys`)).status).toBe(200);
  });
});

describe('where a key reaches', () => {
  it("every workspace of its creator, with the creator's role there", async () => {
    const second = await owner.post('/api/v1/workspaces', { name: 'second' });
    expect(second.status).toBe(201);
    // The bootstrap key was made in the first workspace; it works in the second too.
    const keys = await owner.get(`/api/v1/workspaces/${second.body.id}/api-keys`);
    expect(keys.status).toBe(200);
    expect((await owner.post(`/api/v1/workspaces/${second.body.id}/vpcs`, { name: 'more' })).status).toBe(201);

    // The viewer's key is Owner in the viewer's own workspace and Viewer in the shared one.
    const viewer = p.api(people.viewer.key);
    expect((await viewer.post(`/api/v1/workspaces/${people.viewer.home}/vpcs`, { name: 'own' })).status).toBe(201);
    expect((await viewer.post(`/api/v1/workspaces/${ws}/vpcs`, { name: 'shared' })).status).toBe(403);
  });

  it('no workspace of someone else, not even by a VPC path', async () => {
    const theirs = people.admin.home;
    const vpcs = await p.api(people.admin.key).get(`/api/v1/workspaces/${theirs}/vpcs`);
    const theirVpc = vpcs.body.items[0].id as string;

    for (const path of [
      `/api/v1/workspaces/${theirs}`,
      `/api/v1/workspaces/${theirs}/api-keys`,
      `/api/v1/workspaces/${theirs}/vpcs`,
      `/api/v1/workspaces/${theirs}/vpcs/${theirVpc}/services`,
    ]) {
      const res = await p.api(people.developer.key).get(path);
      expect(res.status, path).toBe(404);
      expect(res.body, path).toEqual({ error: 'workspace not found', code: 'workspace_not_found' });
    }
    const write = await p.api(people.developer.key).post(`/api/v1/workspaces/${theirs}/api-keys`, { name: 'sneaky' });
    expect(write.status).toBe(404);
  });
});

describe('dashboard JWTs', () => {
  it('a verified JWT signs a new user in by e-mail, who starts with no workspace', async () => {
    const jwt = await oidc.sign('newcomer@example.com');
    const res = await p.api(jwt).get('/api/v1/workspaces');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [], next_cursor: null });
  });

  it('a JWT acts with the role of the member it names', async () => {
    const dev = p.api(people.developer.jwt);
    expect((await dev.get(`/api/v1/workspaces/${ws}/vpcs`)).status).toBe(200);
    expect((await dev.post(`/api/v1/workspaces/${ws}/vpcs`, { name: 'by-jwt' })).status).toBe(403);
    const admin = p.api(people.admin.jwt);
    expect((await admin.post(`/api/v1/workspaces/${ws}/vpcs`, { name: 'by-admin-jwt' })).status).toBe(201);
  });

  it('refuses JWTs for another audience, from another issuer, expired, or not signed by the provider', async () => {
    const { generateKeyPair } = await import('jose');
    const stranger = (await generateKeyPair('RS256')).privateKey;
    const bad = [
      await oidc.sign('admin@example.com', { audience: 'someone-else' }),
      await oidc.sign('admin@example.com', { issuer: 'https://evil.example/' }),
      await oidc.sign('admin@example.com', { expiresInSeconds: -60 }),
      await oidc.sign('admin@example.com', { key: stranger }),
      'not.a.jwt',
    ];
    for (const token of bad) {
      const res = await p.api(token).get('/api/v1/workspaces');
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: expect.any(String), code: expect.any(String) });
    }
  });
});
