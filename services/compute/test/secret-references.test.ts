// Environment entries that reference secrets, with the real secrets service (its docker
// store) beside compute on the real Docker engine.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import pg from 'pg';
import os from 'node:os';
import path from 'node:path';
import { mkdtemp, rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { generateIdentityKeys, IDENTITY_HEADER } from '@pier/kit';
import { createTestDatabase, infra } from '@pier/testing';
import type * as secrets from '@pier/secrets';
import { startCompute, startSecretsFor, until, cleanDocker, vpcContainers, TINY_HTTP, type Compute, type TestDatabase } from './support.ts';

const VALUE = `s3cret-${randomBytes(8).toString('hex')}`;
let db: TestDatabase;
let c: Compute;
let secretsService: Awaited<ReturnType<typeof secrets.start>>;
let storeDir: string;
let secretsUrl: string;

beforeAll(async () => {
  const { postgresAdminUrl: postgres } = infra();
  db = await createTestDatabase(postgres);
  const keys = await generateIdentityKeys();
  storeDir = await mkdtemp(path.join(os.tmpdir(), 'pier-secrets-'));
  const started = await startSecretsFor(db, keys, {
    PIER_SECRETS_STORE_DIR: storeDir,
    PIER_SECRETS_STORE_KEY: randomBytes(32).toString('base64'),
  });
  secretsService = started.service;
  secretsUrl = `http://127.0.0.1:${secretsService.httpPort}`;
  c = await startCompute(started.computeEnv, { db, keys });
}, 60_000);

afterAll(async () => {
  await c?.stop();
  await secretsService?.stop();
  await cleanDocker(c.vpcId);
  await db?.drop();
  await rm(storeDir, { recursive: true, force: true });
}, 60_000);

async function secretsApi(method: string, suffix: string, body?: unknown) {
  const res = await fetch(`${secretsUrl}/api/v1/workspaces/${c.workspaceId}/vpcs/${c.vpcId}/secrets${suffix}`, {
    method,
    headers: { [IDENTITY_HEADER]: await c.token('owner'), ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: res.status === 204 ? undefined : await res.json() };
}

const status = (id: string) => c.get(`${c.base}/${id}`).then((r) => r.body);
const settle = (id: string, want: string) =>
  until(
    () => status(id),
    (s) => s.status === want,
  );

describe('secret references in the environment', () => {
  let secretId: string;
  let service: any;

  it('injects a referenced value into the container and never stores or returns it', async () => {
    const created = await secretsApi('POST', '', { name: 'db', values: { PASSWORD: VALUE } });
    expect(created.status).toBe(201);
    secretId = created.body.id;
    service = (await c.post(c.base, { name: 'api', image: TINY_HTTP, health_check_path: '/healthz' })).body;
    await settle(service.id, 'running');

    const put = await c.request('PUT', `${c.base}/${service.id}/env`, {
      variables: [
        { key: 'DB_PASSWORD', secret_id: secretId, secret_key: 'PASSWORD' },
        { key: 'PLAIN', value: 'visible' },
      ],
    });
    expect(put.status).toBe(200);
    expect(put.body.variables[0]).toEqual({ id: expect.any(String), key: 'DB_PASSWORD', secret_id: secretId, secret_key: 'PASSWORD' });
    expect(JSON.stringify(put.body)).not.toContain(VALUE);
    await settle(service.id, 'running');

    const [container] = (await vpcContainers(c.vpcId)).filter((x) => x.Labels['pier.service'] === service.id);
    const ip = container!.NetworkSettings.Networks[`pier-vpc-${c.vpcId}`]!.IPAddress;
    expect(await (await fetch(`http://${ip}:8080/cgi-bin/env`)).text()).toContain(`DB_PASSWORD=${VALUE}`);

    const env = await c.get(`${c.base}/${service.id}/env`);
    expect(JSON.stringify(env.body)).not.toContain(VALUE);
    expect(JSON.stringify(await status(service.id))).not.toContain(VALUE);

    // Nowhere in compute's schema: every text-ish column of every table.
    const client = new pg.Client({ connectionString: db.adminUrl });
    await client.connect();
    try {
      const tables = await client.query(`select table_name from information_schema.tables where table_schema = 'compute'`);
      for (const { table_name } of tables.rows) {
        const hit = await client.query(`select count(*)::int as n from compute.${table_name} t where t::text like $1`, [`%${VALUE}%`]);
        expect(hit.rows[0].n, `compute.${table_name}`).toBe(0);
      }
    } finally {
      await client.end();
    }
  });

  it('refuses references to an unknown secret or key with 400 naming the entry', async () => {
    const unknownSecret = await c.request('PUT', `${c.base}/${service.id}/env`, {
      variables: [{ key: 'X', secret_id: '00000000-0000-4000-8000-000000000000', secret_key: 'PASSWORD' }],
    });
    expect(unknownSecret.status).toBe(400);
    expect(unknownSecret.body).toMatchObject({ code: 'secret_not_found', field: 'variables.0.secret_id' });
    const unknownKey = await c.request('PUT', `${c.base}/${service.id}/env`, {
      variables: [
        { key: 'OK', value: '1' },
        { key: 'X', secret_id: secretId, secret_key: 'NOPE' },
      ],
    });
    expect(unknownKey.status).toBe(400);
    expect(unknownKey.body).toMatchObject({ code: 'key_not_found', field: 'variables.1.secret_key' });
    expect(unknownKey.body.error).toMatch(/NOPE/);
    // Nothing changed.
    expect((await c.get(`${c.base}/${service.id}/env`)).body.variables.map((v: any) => v.key)).toEqual(['DB_PASSWORD', 'PLAIN']);
  });

  it('fails the next rollout with a missing-secret error once the secret is deleted, and reads crashed', async () => {
    expect((await secretsApi('DELETE', `/${secretId}`)).status).toBe(204);
    const res = await c.post(`${c.base}/${service.id}/restart`);
    expect(res.status).toBe(202);
    expect(res.body.deployment.status).toBe('failed');
    expect(res.body.deployment.message).toMatch(/missing secret/);
    expect(res.body.deployment.message).toContain(secretId);
    expect(res.body.service.status).toBe('crashed');
    const after = await status(service.id);
    expect(after.status).toBe('crashed');
    expect(after.status_message).toMatch(/missing secret/);
    const history = await c.get(`${c.base}/${service.id}/deployments`);
    expect(history.body.items[0]).toMatchObject({ reason: 'restart', status: 'failed' });

    // Repointing the variable (here: dropping it) brings it back.
    const put = await c.request('PUT', `${c.base}/${service.id}/env`, { variables: [{ key: 'PLAIN', value: 'visible' }] });
    expect(put.status).toBe(200);
    await settle(service.id, 'running');
  });
});
