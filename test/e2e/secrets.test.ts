// Secrets through the gateway, as a script holding API keys sees them: the role matrix,
// duplicate names, every bad input, values that never reach Pier's database or logs, and
// a 503 with nothing written when the docker secret store is unusable.
import { mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';
import { startOidcProvider, type OidcProvider } from '../support/oidc.ts';
import { memberKey } from '../support/members.ts';
import { SecretsClient } from '@pier/secrets';
import { adminQuery, encodingsOf, findInDatabase, secretRows } from '../../services/secrets/test/support.ts';
import { captureOutput, type CapturedOutput } from './secrets-support.ts';

const FORBIDDEN = { error: 'insufficient workspace permissions', code: 'forbidden' };
type Role = 'owner' | 'admin' | 'developer' | 'viewer';

let p: Platform;
let oidc: OidcProvider;
let output: CapturedOutput;
let storeRoot: string;
let storeDir: string;
let base: string;
const as: Record<Role, Api> = {} as never;

beforeAll(async () => {
  // Every service's log lines, secrets' at debug level, are kept to be searched below.
  output = captureOutput();
  oidc = await startOidcProvider();
  storeRoot = await mkdtemp(path.join(tmpdir(), 'pier-e2e-secrets-'));
  storeDir = path.join(storeRoot, 'store');
  p = await startPlatform({ env: { auth: oidc.env, secrets: { PIER_SECRETS_STORE_DIR: storeDir, PIER_LOG_LEVEL: 'debug' } }, logLevel: 'info' });
  const ws = p.bootstrap.workspaceId;
  base = `/api/v1/workspaces/${ws}/vpcs/${p.bootstrap.vpcId}/secrets`;
  const owner = p.api(p.bootstrap.token);
  as.owner = owner;
  for (const role of ['admin', 'developer', 'viewer'] as const) as[role] = p.api(await memberKey(p, oidc, `secrets-${role}@example.com`, role));
}, 120_000);

afterAll(async () => {
  await p?.stop();
  await oidc?.stop();
  output?.restore();
  if (storeRoot) await rm(storeRoot, { recursive: true, force: true });
});

describe('secrets through the gateway', () => {
  it.each([
    ['owner', 201, 204],
    ['admin', 201, 204],
    ['developer', 403, 403],
    ['viewer', 403, 403],
  ] as const)('%s: create %i, delete %i; list and detail 200', async (role, create, del) => {
    const created = await as[role].post(base, { name: `matrix-${role}`, values: { K: 'v' } });
    expect(created.status).toBe(create);
    if (create === 403) expect(created.body).toEqual(FORBIDDEN);
    const target = create === 201 ? created.body : (await as.owner.post(base, { name: `matrix-for-${role}`, values: { K: 'v' } })).body;
    const list = await as[role].get(base);
    expect(list.status).toBe(200);
    expect(list.body.items.map((s: { id: string }) => s.id)).toContain(target.id);
    const detail = await as[role].get(`${base}/${target.id}`);
    expect(detail.status).toBe(200);
    expect(detail.body).toEqual(target);
    const removed = await as[role].delete(`${base}/${target.id}`);
    expect(removed.status).toBe(del);
    if (del === 403) expect(removed.body).toEqual(FORBIDDEN);
    else expect(removed.body).toBeUndefined();
  });

  it('refuses a request without a token (401)', async () => {
    const res = await p.api().get(base);
    expect(res.status).toBe(401);
  });

  it('returns id, name, key names and timestamps — never values', async () => {
    const res = await as.admin.post(base, { name: 'shape', values: { B_KEY: 'b-value', A_KEY: 'a-value' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      workspace_id: p.bootstrap.workspaceId,
      vpc_id: p.bootstrap.vpcId,
      name: 'shape',
      keys: ['A_KEY', 'B_KEY'],
      created_at: expect.stringMatching(/Z$/),
      updated_at: expect.stringMatching(/Z$/),
    });
    for (const r of [res, await as.viewer.get(`${base}/${res.body.id}`), await as.viewer.get(base)]) {
      expect(JSON.stringify(r.body)).not.toMatch(/a-value|b-value/);
    }
  });

  it('rejects a duplicate name in the VPC with 409', async () => {
    expect((await as.owner.post(base, { name: 'twice', values: { A: '1' } })).status).toBe(201);
    const again = await as.owner.post(base, { name: 'twice', values: { A: '2' } });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: 'a secret named twice already exists in this VPC', code: 'already_exists' });
  });

  it.each([
    ['no name', { values: { K: 'v' } }, 'name: is required'],
    ['a number as name', { name: 7, values: { K: 'v' } }, 'name: must be a string'],
    ['an empty name', { name: '', values: { K: 'v' } }, 'name: must not be empty'],
    ['an uppercase name', { name: 'MySecret', values: { K: 'v' } }, 'name: must be a DNS-1123 label'],
    ['a name with a dot', { name: 'my.secret', values: { K: 'v' } }, 'name: must be a DNS-1123 label'],
    ['a name ending in -', { name: 'secret-', values: { K: 'v' } }, 'name: must be a DNS-1123 label'],
    ['a 64-character name', { name: 'a'.repeat(64), values: { K: 'v' } }, 'name: must be at most 63 characters'],
    ['no values', { name: 'bad-input' }, 'values: is required'],
    ['values as an array', { name: 'bad-input', values: [{ K: 'v' }] }, 'values: must be an object of string keys to string values, not an array'],
    ['values as a string', { name: 'bad-input', values: 'K=v' }, 'values: must be an object of string keys to string values, not a string'],
    ['a nested object', { name: 'bad-input', values: { K: { inner: 'v' } } }, 'values.K: must be a string, not an object'],
    ['an array value', { name: 'bad-input', values: { K: ['v'] } }, 'values.K: must be a string, not an array'],
    ['a number value', { name: 'bad-input', values: { PORT: 5432 } }, 'values.PORT: must be a string, not a number'],
    ['a boolean value', { name: 'bad-input', values: { ON: true } }, 'values.ON: must be a string, not a boolean'],
    ['a null value', { name: 'bad-input', values: { K: null } }, 'values.K: must be a string, not null'],
    ['a NUL in a value', { name: 'bad-input', values: { K: 'a\u0000b' } }, 'values.K: must not contain NUL characters'],
    ['an empty key', { name: 'bad-input', values: { '': 'v' } }, 'values: keys must not be empty'],
    ['a key with a dash', { name: 'bad-input', values: { 'API-KEY': 'v' } }, 'values: key "API-KEY" cannot be an environment variable name'],
    ['a key starting with a digit', { name: 'bad-input', values: { '9LIVES': 'v' } }, 'values: key "9LIVES" cannot be an environment variable name'],
    ['a key with a space', { name: 'bad-input', values: { 'MY KEY': 'v' } }, 'values: key "MY KEY" cannot be an environment variable name'],
    ['no keys at all', { name: 'bad-input', values: {} }, 'values: must hold at least one key'],
    [
      'values over 64 KiB',
      { name: 'bad-input', values: { A: 'x'.repeat(40_000), B: 'y'.repeat(30_000) } },
      'values: total size 70002 bytes exceeds the limit of 65536 bytes',
    ],
    ['an unknown field', { name: 'bad-input', values: { K: 'v' }, value: 'typo' }, 'Unrecognized key: "value"'],
  ])('rejects %s with 400 naming the problem, writing nothing', async (_label, body, message) => {
    const before = await secretRows(p.database.adminUrl);
    const res = await as.owner.post(base, body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: expect.stringContaining(message), code: 'invalid_request' });
    expect(await secretRows(p.database.adminUrl)).toEqual(before);
  });

  it('rejects malformed JSON with 400', async () => {
    const res = await as.owner.post(base, undefined, { rawBody: '{"name": "x", "values": {' });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('malformed_json');
  });

  it('answers 404 for unknown and malformed secret ids', async () => {
    for (const id of [crypto.randomUUID(), 'nope']) {
      expect((await as.viewer.get(`${base}/${id}`)).body).toEqual({ error: 'secret not found', code: 'secret_not_found' });
      expect((await as.owner.delete(`${base}/${id}`)).status).toBe(404);
    }
  });

  it('never stores a value in the database or any log', async () => {
    const value = `e2e-canary-${crypto.randomUUID()}`;
    const res = await as.admin.post(base, { name: 'canary', values: { CANARY_TOKEN: value } });
    expect(res.status).toBe(201);
    const needles = encodingsOf(value);
    // Every column of every table of every schema (system catalogs included) ...
    expect(await findInDatabase(p.database.adminUrl, needles)).toEqual([]);
    // The key's name (never its value) is where the search must find it, so the search works:
    // the secret and its event; and the events service's copy of that event once it has
    // received it from NATS, which may be a moment after the answer (a CI run found it there).
    const named = await findInDatabase(p.database.adminUrl, ['CANARY_TOKEN']);
    expect(named.filter((table) => table !== 'events.events')).toEqual(['secrets.outbox', 'secrets.secrets']);
    // ... and every log line any service wrote, which did see this request.
    expect(output.text).toContain(res.body.id);
    for (const n of needles) expect(output.text).not.toContain(n);

    // The value is in the store, and compute (only compute) can have it.
    const client = new SecretsClient({ address: p.serviceUrls.secretsGrpc!, privateKeyJwk: p.computeKeys.privateJwk });
    try {
      const [resolved] = await client.resolveReferences(p.bootstrap.workspaceId, p.bootstrap.vpcId, [{ secretId: res.body.id, key: 'CANARY_TOKEN' }]);
      expect(resolved?.value).toBe(value);
    } finally {
      client.close();
    }
  });

  it('answers 503 with nothing written when the secret store is unusable', async () => {
    const rows = await secretRows(p.database.adminUrl);
    const outbox = await adminQuery(p.database.adminUrl, 'select count(*)::int as n from secrets.outbox');
    const files = await readdir(storeDir, { recursive: true });
    await rename(storeDir, `${storeDir}.away`);
    await writeFile(storeDir, 'the store is gone');
    try {
      const res = await as.owner.post(base, { name: 'while-down', values: { K: 'v' } });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: "the cluster's secret store cannot be reached; nothing was written", code: 'cluster_unavailable' });
      expect(await secretRows(p.database.adminUrl)).toEqual(rows);
      expect(await adminQuery(p.database.adminUrl, 'select count(*)::int as n from secrets.outbox')).toEqual(outbox);
    } finally {
      await rm(storeDir);
      await rename(`${storeDir}.away`, storeDir);
    }
    expect(await readdir(storeDir, { recursive: true })).toEqual(files);
    expect((await as.owner.post(base, { name: 'while-down', values: { K: 'v' } })).status).toBe(201);
  });
});
