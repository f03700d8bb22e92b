// The life of a credential through the gateway: API keys revoked or expired and CLI
// sessions are refused on their very next request; the bootstrap's files are the
// owner's alone and survive a restart; the API describes itself.
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as auth from '@pier/auth';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';

const INVALID_KEY = { error: 'invalid or expired API key', code: 'invalid_api_key' };

let p: Platform;
let owner: Api;
let ws: string;

/** Runs SQL as the database superuser: test set-up only (ageing a credential). */
async function sql(text: string, values: unknown[]): Promise<number> {
  const client = new pg.Client({ connectionString: p.database.adminUrl });
  await client.connect();
  try {
    return (await client.query(text, values)).rowCount ?? 0;
  } finally {
    await client.end();
  }
}

/** Waits until the database's clock has passed the credential's expires_at. */
async function untilPast(id: string, table: 'api_keys' | 'cli_sessions'): Promise<void> {
  while ((await sql(`select 1 from auth.${table} where id = $1 and expires_at > now()`, [id])) > 0) await new Promise((r) => setTimeout(r, 100));
}

beforeAll(async () => {
  p = await startPlatform();
  owner = p.api(p.bootstrap.token);
  ws = p.bootstrap.workspaceId;
}, 60_000);

afterAll(async () => {
  await p?.stop();
});

describe('who the token acts as', () => {
  it('GET /api/v1/me names the user of a key and of a CLI session alike, and refuses no token', async () => {
    const me = await owner.get('/api/v1/me');
    expect(me.status).toBe(200);
    expect(me.body).toEqual({ id: expect.any(String), email: p.bootstrap.email });
    const session = (await owner.post('/api/v1/cli-sessions', { name: 'me-test' })).body.token as string;
    expect((await p.api(session).get('/api/v1/me')).body).toEqual(me.body);
    expect((await p.api().get('/api/v1/me')).status).toBe(401);
  });
});

describe('API keys', () => {
  it('a revoked key gets 401 on its very next request, with the exact body', async () => {
    const created = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'to-revoke', scopes: ['deploy'] });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'to-revoke', workspace_id: ws, scopes: ['deploy'], key_prefix: created.body.key.slice(0, 12) });
    const key = p.api(created.body.key);
    expect((await key.get('/api/v1/workspaces')).status).toBe(200);

    const revoked = await owner.delete(`/api/v1/workspaces/${ws}/api-keys/${created.body.id}`);
    expect(revoked.status).toBe(204);
    expect(revoked.body).toBeUndefined();
    expect(revoked.headers.get('content-length') ?? '0').toBe('0');

    const next = await key.get('/api/v1/workspaces');
    expect(next.status).toBe(401);
    expect(next.body).toEqual(INVALID_KEY);
    expect(next.headers.get('content-type')).toMatch(/application\/json/);
    // And everywhere else, writes included.
    expect((await key.post(`/api/v1/workspaces/${ws}/vpcs`, { name: 'x' })).body).toEqual(INVALID_KEY);
    expect((await key.get(`/api/v1/workspaces/${ws}/vpcs/${p.bootstrap.vpcId}/services`)).body).toEqual(INVALID_KEY);
  });

  it('a key whose expires_at has passed gets 401 on its next request', async () => {
    const created = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'short-lived', expires_in_days: 1 });
    expect(created.status).toBe(201);
    const expiresAt = Date.parse(created.body.expires_at);
    expect(expiresAt - Date.now()).toBeGreaterThan(23 * 3600_000);
    expect(expiresAt - Date.now()).toBeLessThanOrEqual(24 * 3600_000 + 60_000);
    const key = p.api(created.body.key);

    // Waiting a day is not a test; moving the instant is. It is moved before the key's
    // first use, so the gateway's cache holds the answer with the expiry it will really
    // have: expiry needs no message, the cached answer ends with the key.
    expect(await sql(`update auth.api_keys set expires_at = now() + interval '1.5 seconds' where id = $1`, [created.body.id])).toBe(1);
    expect((await key.get(`/api/v1/workspaces/${ws}/vpcs`)).status).toBe(200);
    expect((await key.get(`/api/v1/workspaces/${ws}/vpcs`)).status).toBe(200);
    await untilPast(created.body.id, 'api_keys');
    const next = await key.get(`/api/v1/workspaces/${ws}/vpcs`);
    expect(next.status).toBe(401);
    expect(next.body).toEqual(INVALID_KEY);
  });

  it('an unknown or malformed key gets the same 401', async () => {
    for (const token of [`sk-${'a'.repeat(64)}`, 'sk-short', `sk-${'Z'.repeat(64)}`]) {
      const res = await p.api(token).get('/api/v1/workspaces');
      expect(res.status).toBe(401);
      expect(res.body).toEqual(INVALID_KEY);
    }
  });

  it('last_used_at moves on accepted requests (batched, within about a second)', async () => {
    const created = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'rotation-check' });
    await p.api(created.body.key).get('/api/v1/workspaces');
    let seen: string | null = null;
    for (let i = 0; i < 30 && !seen; i++) {
      const list = await owner.get(`/api/v1/workspaces/${ws}/api-keys`);
      seen = list.body.items.find((k: { id: string }) => k.id === created.body.id)?.last_used_at ?? null;
      if (!seen) await new Promise((r) => setTimeout(r, 100));
    }
    expect(seen).not.toBeNull();
  });
});

describe('CLI session tokens', () => {
  it('a session token works like any other token until revoked', async () => {
    const created = await owner.post('/api/v1/cli-sessions', { name: 'laptop' });
    expect(created.status).toBe(201);
    expect(created.body.token).toMatch(/^[0-9a-f]{64}$/);
    const session = p.api(created.body.token);
    expect((await session.get(`/api/v1/workspaces/${ws}/api-keys`)).status).toBe(200);
    expect((await session.post(`/api/v1/workspaces/${ws}/vpcs`, { name: 'by-session' })).status).toBe(201);

    expect((await owner.delete(`/api/v1/cli-sessions/${created.body.id}`)).status).toBe(204);
    const next = await session.get('/api/v1/workspaces');
    expect(next.status).toBe(401);
    expect(next.body).toEqual({ error: expect.any(String), code: expect.any(String) });
  });

  it('a session minted with an API key is revoked with the key: 401 on its very next request', async () => {
    const created = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'login-key' });
    expect(created.status).toBe(201);
    const minted = await p.api(created.body.key).post('/api/v1/cli-sessions', { name: 'from-key' });
    expect(minted.status).toBe(201);
    const session = p.api(minted.body.token);
    const vpcs = `/api/v1/workspaces/${ws}/vpcs`;
    // Twice: the second answer is the gateway's cached one, which the revoke must void too.
    expect((await session.get(vpcs)).status).toBe(200);
    expect((await session.get(vpcs)).status).toBe(200);

    expect((await owner.delete(`/api/v1/workspaces/${ws}/api-keys/${created.body.id}`)).status).toBe(204);
    const next = await session.get(vpcs);
    expect(next.status).toBe(401);
    expect(next.body).toEqual({ error: 'invalid or expired CLI session token', code: 'invalid_session' });
    // Everywhere, not only in the key's workspace, and no longer listed as live.
    expect((await session.get('/api/v1/me')).status).toBe(401);
    expect((await session.post('/api/v1/workspaces', { name: 'escape' })).status).toBe(401);
    const listed = (await owner.get('/api/v1/cli-sessions?limit=200')).body.items.map((s: { id: string }) => s.id);
    expect(listed).not.toContain(minted.body.id);
  });

  it('a session minted with an API key expires no later than the key, and says which key it rides on', async () => {
    const created = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'short-login-key', expires_in_days: 2 });
    expect(created.status).toBe(201);
    const minted = await p.api(created.body.key).post('/api/v1/cli-sessions', { expires_in_days: 3650 });
    expect(minted.status).toBe(201);
    expect(minted.body.expires_at).toBe(created.body.expires_at);
    expect(minted.body.api_key_id).toBe(created.body.id);
    // One minted by that session rides on the same key: a chain does not escape it.
    const chained = await p.api(minted.body.token).post('/api/v1/cli-sessions', {});
    expect(chained.status).toBe(201);
    expect(chained.body).toMatchObject({ api_key_id: created.body.id, expires_at: created.body.expires_at });
    expect((await owner.delete(`/api/v1/workspaces/${ws}/api-keys/${created.body.id}`)).status).toBe(204);
    expect((await p.api(chained.body.token).get('/api/v1/me')).status).toBe(401);
  });

  it('an expired session token is refused', async () => {
    const created = await owner.post('/api/v1/cli-sessions', { expires_in_days: 7 });
    const session = p.api(created.body.token);
    expect(await sql(`update auth.cli_sessions set expires_at = now() + interval '1.5 seconds' where id = $1`, [created.body.id])).toBe(1);
    expect((await session.get('/api/v1/workspaces')).status).toBe(200);
    expect((await session.get('/api/v1/workspaces')).status).toBe(200);
    await untilPast(created.body.id, 'cli_sessions');
    expect((await session.get('/api/v1/workspaces')).status).toBe(401);
  });
});

describe('bootstrap', () => {
  it('wrote the CLI files, owner-only, pointing at the gateway and the default workspace and VPC', async () => {
    const credentialsPath = path.join(p.bootstrap.configDir, 'credentials.json');
    const configPath = path.join(p.bootstrap.configDir, 'config.json');
    expect((await stat(credentialsPath)).mode & 0o777).toBe(0o600);
    expect((await stat(configPath)).mode & 0o777).toBe(0o600);
    const credentials = JSON.parse(await readFile(credentialsPath, 'utf8'));
    expect(credentials).toEqual({ api_url: p.gatewayUrl, token: expect.stringMatching(/^sk-[0-9a-f]{64}$/) });

    const api = p.api(credentials.token);
    const workspace = await api.get(`/api/v1/workspaces/${p.bootstrap.workspaceId}`);
    expect(workspace.body).toMatchObject({ name: 'default', role: 'owner' });
    const vpc = await api.get(`/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}`);
    expect(vpc.status).toBe(200);
    expect(vpc.body).toMatchObject({ id: p.bootstrap.vpcId, name: 'default' });
    const keys = await api.get(`/api/v1/workspaces/${p.bootstrap.workspaceId}/api-keys`);
    expect(keys.body.items.filter((k: { name: string }) => k.name === 'bootstrap')).toHaveLength(1);
  });

  it('a restart keeps the files and creates nothing new', async () => {
    const credentialsPath = path.join(p.bootstrap.configDir, 'credentials.json');
    const before = { text: await readFile(credentialsPath, 'utf8'), mtime: (await stat(credentialsPath)).mtimeMs };
    const second = await auth.start(
      auth.readConfig({
        PIER_DATABASE_URL: p.database.urls.auth,
        PIER_NATS_URL: p.natsUrl,
        PIER_IDENTITY_PUBLIC_KEY: p.keys.publicJwk,
        PIER_IDENTITY_PRIVATE_KEY: p.keys.privateJwk,
        PIER_AUTH_HTTP_PORT: '0',
        PIER_AUTH_GRPC_PORT: '0',
        PIER_CONFIG_DIR: p.bootstrap.configDir,
        PIER_PUBLIC_URL: p.gatewayUrl,
        PIER_LOG_LEVEL: 'warn',
      }),
    );
    try {
      expect(second.bootstrap).toMatchObject({ created: false, workspaceId: p.bootstrap.workspaceId, vpcId: p.bootstrap.vpcId });
      expect(second.bootstrap?.token).toBeUndefined();
    } finally {
      await second.stop();
    }
    expect(await readFile(credentialsPath, 'utf8')).toBe(before.text);
    expect((await stat(credentialsPath)).mtimeMs).toBe(before.mtime);
    const mine = await owner.get('/api/v1/workspaces');
    expect(mine.body.items.filter((w: { name: string }) => w.name === 'default')).toHaveLength(1);
  });
});

describe('GET /api/v1/openapi.json', () => {
  it('needs no token and is one OpenAPI 3.1 document with every routed path', async () => {
    const res = await p.api().get('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body;
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.schemas.Error).toMatchObject({ type: 'object', required: expect.arrayContaining(['error', 'code']) });
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.paths['/api/v1/openapi.json'].get.security).toEqual([]);

    // Every public path each routed service declares is in the merged document.
    for (const base of [p.serviceUrls.auth, p.serviceUrls.compute, p.serviceUrls.databases, p.serviceUrls.secrets]) {
      if (!base) continue;
      const own = (await (await fetch(`${base}/internal/openapi`)).json()) as Record<string, Record<string, unknown>>;
      for (const [route, operations] of Object.entries(own)) {
        for (const method of Object.keys(operations)) expect(doc.paths[route]?.[method], `${method} ${route}`).toBeDefined();
      }
    }
    for (const route of ['/api/v1/workspaces', '/api/v1/workspaces/{workspaceID}/api-keys', '/api/v1/workspaces/{workspaceID}/api-keys/{keyID}']) {
      expect(doc.paths[route], route).toBeDefined();
    }
    const create = doc.paths['/api/v1/workspaces/{workspaceID}/api-keys'].post;
    expect(create.requestBody.content['application/json'].schema.properties).toHaveProperty('expires_in_days');
    expect(create.responses['401'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    // Nothing internal leaks into the public description.
    expect(Object.keys(doc.paths).every((route) => route.startsWith('/api/v1/'))).toBe(true);
  });
});
