import { rename, writeFile, rm, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDENTITY_HEADER, type Role } from '@pier/kit';
import { adminQuery, collectEvents, encodingsOf, findInDatabase, secretRows, startSecrets, type Harness } from './support.ts';

// The secrets service over HTTP with identities minted the way auth mints them; real
// PostgreSQL, real NATS, the docker adapter's real encrypted store.

describe('secrets HTTP API (docker store)', () => {
  let h: Harness;
  let events: Awaited<ReturnType<typeof collectEvents>>;
  const http = () => request(h.url);
  const post = async (role: Role, body: unknown) =>
    http()
      .post(h.base)
      .set(IDENTITY_HEADER, await h.token(role))
      .send(body as object);

  beforeAll(async () => {
    h = await startSecrets();
    events = await collectEvents(h.natsUrl, h.workspaceId, h.vpcId);
  });
  afterAll(async () => {
    await events?.close();
    await h?.stop();
  });

  it('creates a secret (201) and shows id, name, key names and timestamps, never values', async () => {
    const res = await post('admin', { name: 'api-creds', values: { TOKEN: 'tok-123', API_URL: 'https://x' } });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['created_at', 'id', 'keys', 'name', 'updated_at', 'vpc_id', 'workspace_id']);
    expect(res.body).toMatchObject({ name: 'api-creds', keys: ['API_URL', 'TOKEN'], workspace_id: h.workspaceId, vpc_id: h.vpcId });
    expect(new Date(res.body.created_at).toISOString()).toBe(res.body.created_at);

    const detail = await http()
      .get(`${h.base}/${res.body.id}`)
      .set(IDENTITY_HEADER, await h.token('viewer'));
    expect(detail.status).toBe(200);
    expect(detail.body).toEqual(res.body);
    expect(JSON.stringify(detail.body)).not.toContain('tok-123');

    const created = await events.waitFor('secret.created', res.body.id);
    expect(created.subject).toBe(`pier.events.${h.workspaceId}.${h.vpcId}.secret_created.${res.body.id}`);
    expect(created.payload.data).toEqual({ id: res.body.id, name: 'api-creds', keys: ['API_URL', 'TOKEN'] });
    expect(created.raw).not.toContain('tok-123');
  });

  it('enforces roles: members read, only owner/admin write (403 insufficient workspace permissions)', async () => {
    for (const role of ['owner', 'admin', 'developer', 'viewer'] as const) {
      const writer = role === 'owner' || role === 'admin';
      const created = await post(role, { name: `by-${role}`, values: { K: 'v' } });
      expect(created.status, role).toBe(writer ? 201 : 403);
      if (!writer) expect(created.body).toEqual({ error: 'insufficient workspace permissions', code: 'forbidden' });
      const list = await http()
        .get(h.base)
        .set(IDENTITY_HEADER, await h.token(role));
      expect(list.status, role).toBe(200);
    }
    const target = (await post('owner', { name: 'to-delete-roles', values: { K: 'v' } })).body.id;
    for (const role of ['developer', 'viewer'] as const) {
      const res = await http()
        .delete(`${h.base}/${target}`)
        .set(IDENTITY_HEADER, await h.token(role));
      expect(res.status).toBe(403);
      expect(res.body.error).toBe('insufficient workspace permissions');
    }
    const ok = await http()
      .delete(`${h.base}/${target}`)
      .set(IDENTITY_HEADER, await h.token('admin'));
    expect(ok.status).toBe(204);
    expect(ok.text).toBe('');
  });

  it('refuses a missing identity (401) and an identity for another workspace or VPC (403)', async () => {
    expect((await http().get(h.base)).status).toBe(401);
    const otherVpc = await h.token('owner', { workspaceId: h.workspaceId, vpcId: crypto.randomUUID() });
    expect((await http().get(h.base).set(IDENTITY_HEADER, otherVpc)).status).toBe(403);
    const otherWs = await h.token('owner', { workspaceId: crypto.randomUUID(), vpcId: h.vpcId });
    expect((await http().get(h.base).set(IDENTITY_HEADER, otherWs)).status).toBe(403);
  });

  it('rejects a duplicate name in the VPC with 409 already_exists; the same name in another VPC is fine', async () => {
    expect((await post('admin', { name: 'dup', values: { A: '1' } })).status).toBe(201);
    const again = await post('admin', { name: 'dup', values: { B: '2' } });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: 'a secret named dup already exists in this VPC', code: 'already_exists' });
    const otherVpc = crypto.randomUUID();
    const token = await h.token('admin', { workspaceId: h.workspaceId, vpcId: otherVpc });
    const res = await http()
      .post(`/api/v1/workspaces/${h.workspaceId}/vpcs/${otherVpc}/secrets`)
      .set(IDENTITY_HEADER, token)
      .send({ name: 'dup', values: { A: '1' } });
    expect(res.status).toBe(201);
  });

  it.each([
    ['no name', { values: { K: 'v' } }, 'name: is required'],
    ['a name that is not a DNS-1123 label', { name: 'Bad_Name', values: { K: 'v' } }, 'name: must be a DNS-1123 label'],
    ['no values', { name: 'ok-name' }, 'values: is required'],
    ['a nested object', { name: 'ok-name', values: { K: { deep: 'x' } } }, 'values.K: must be a string, not an object'],
    ['an array value', { name: 'ok-name', values: { K: ['x'] } }, 'values.K: must be a string, not an array'],
    ['a number value', { name: 'ok-name', values: { K: 42 } }, 'values.K: must be a string, not a number'],
    ['an empty key', { name: 'ok-name', values: { '': 'x' } }, 'values: keys must not be empty'],
    ['a key no environment can carry', { name: 'ok-name', values: { 'NOT-ENV': 'x' } }, 'values: key "NOT-ENV" cannot be an environment variable name'],
    ['no keys', { name: 'ok-name', values: {} }, 'values: must hold at least one key'],
    ['values over 64 KiB', { name: 'ok-name', values: { K: 'x'.repeat(70_000) } }, 'values: total size 70001 bytes exceeds the limit of 65536 bytes'],
  ])('rejects %s with 400 naming the problem, writing nothing', async (_label, body, message) => {
    const before = (await secretRows(h.db.adminUrl)).length;
    const res = await post('admin', body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
    expect(res.body.error).toContain(message);
    expect((await secretRows(h.db.adminUrl)).length).toBe(before);
  });

  it('rejects malformed JSON and a body that is not JSON with 400', async () => {
    const token = await h.token('admin');
    const bad = await http().post(h.base).set(IDENTITY_HEADER, token).set('content-type', 'application/json').send('{"name":');
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('malformed_json');
    const text = await http().post(h.base).set(IDENTITY_HEADER, token).set('content-type', 'text/plain').send('name=x');
    expect(text.status).toBe(400);
  });

  it('answers 404 secret_not_found for a malformed id, an unknown id, and a secret of another VPC', async () => {
    const viewer = await h.token('viewer');
    for (const id of ['not-a-uuid', crypto.randomUUID()]) {
      const res = await http().get(`${h.base}/${id}`).set(IDENTITY_HEADER, viewer);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'secret not found', code: 'secret_not_found' });
      expect(
        (
          await http()
            .delete(`${h.base}/${id}`)
            .set(IDENTITY_HEADER, await h.token('admin'))
        ).status,
      ).toBe(404);
    }
    const otherVpc = crypto.randomUUID();
    const elsewhere = await http()
      .post(`/api/v1/workspaces/${h.workspaceId}/vpcs/${otherVpc}/secrets`)
      .set(IDENTITY_HEADER, await h.token('admin', { workspaceId: h.workspaceId, vpcId: otherVpc }))
      .send({ name: 'elsewhere', values: { A: '1' } });
    const res = await http().get(`${h.base}/${elsewhere.body.id}`).set(IDENTITY_HEADER, viewer);
    expect(res.status).toBe(404);
  });

  it('paginates with limit and an opaque cursor', async () => {
    const vpcId = crypto.randomUUID();
    const scope = { workspaceId: h.workspaceId, vpcId };
    const base = `/api/v1/workspaces/${h.workspaceId}/vpcs/${vpcId}/secrets`;
    const admin = await h.token('admin', scope);
    const names = ['p-1', 'p-2', 'p-3', 'p-4', 'p-5'];
    for (const name of names)
      expect(
        (
          await http()
            .post(base)
            .set(IDENTITY_HEADER, admin)
            .send({ name, values: { A: 'x' } })
        ).status,
      ).toBe(201);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: request.Response = await http()
        .get(base)
        .query(cursor ? { limit: 2, cursor } : { limit: 2 })
        .set(IDENTITY_HEADER, admin);
      expect(res.status).toBe(200);
      seen.push(...res.body.items.map((i: { name: string }) => i.name));
      for (const item of res.body.items) expect(item).not.toHaveProperty('values');
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor);
    expect(seen).toEqual(names);
    expect(pages).toBe(3);
    const all = await http().get(base).set(IDENTITY_HEADER, admin);
    expect(all.body.items).toHaveLength(5);
    expect(all.body.next_cursor).toBeNull();
    for (const q of [{ limit: 0 }, { limit: 201 }, { limit: 'x' }, { cursor: 'garbage' }]) {
      const res = await http().get(base).query(q).set(IDENTITY_HEADER, admin);
      expect(res.status, JSON.stringify(q)).toBe(400);
    }
  });

  it('deletes (204) from both sides, with a secret.deleted event; a second delete is 404', async () => {
    const created = await post('admin', { name: 'short-lived', values: { A: 'gone-soon' } });
    const id = created.body.id;
    const file = path.join(h.storeDir, `vpc-${h.vpcId}`, `${id}.secret`);
    await readFile(file);
    const res = await http()
      .delete(`${h.base}/${id}`)
      .set(IDENTITY_HEADER, await h.token('owner'));
    expect(res.status).toBe(204);
    await expect(readFile(file)).rejects.toThrow(/ENOENT/);
    expect((await secretRows(h.db.adminUrl)).some((r) => r.id === id)).toBe(false);
    expect(
      (
        await http()
          .get(`${h.base}/${id}`)
          .set(IDENTITY_HEADER, await h.token('viewer'))
      ).status,
    ).toBe(404);
    expect(
      (
        await http()
          .delete(`${h.base}/${id}`)
          .set(IDENTITY_HEADER, await h.token('owner'))
      ).status,
    ).toBe(404);
    const deleted = await events.waitFor('secret.deleted', id);
    expect(deleted.payload.data).toEqual({ id, name: 'short-lived' });
  });

  it('never stores a value in the database or the logs', async () => {
    const value = `pier-leak-canary-${crypto.randomUUID()}`;
    const res = await post('admin', { name: 'canary', values: { CANARY: value } });
    expect(res.status).toBe(201);
    expect(JSON.stringify(res.body)).not.toContain(value);
    // Let the outbox relay publish, so the event rows are in their final form too.
    await events.waitFor('secret.created', res.body.id);
    const needles = encodingsOf(value);
    expect(await findInDatabase(h.db.adminUrl, needles)).toEqual([]);
    // The search does find what is there: the key name is stored, in the record and the event.
    expect(await findInDatabase(h.db.adminUrl, ['CANARY'])).toEqual(['secrets.outbox', 'secrets.secrets']);
    // The value exists, only elsewhere: the store holds it (encrypted) ...
    const file = await readFile(path.join(h.storeDir, `vpc-${h.vpcId}`, `${res.body.id}.secret`));
    for (const n of needles) expect(file.includes(n)).toBe(false);
    // ... and the logs saw the request (debug level), but not the value.
    expect(h.logs.text).toContain(res.body.id);
    for (const n of needles) expect(h.logs.text).not.toContain(n);
    for (const e of events.events) for (const n of needles) expect(e.raw).not.toContain(n);
  });

  it('answers 503 cluster_unavailable and writes nothing when the store is unusable', async () => {
    const rowsBefore = await secretRows(h.db.adminUrl);
    const outboxBefore = await adminQuery(h.db.adminUrl, 'select count(*)::int as n from secrets.outbox');
    const existing = await post('admin', { name: 'survives-outage', values: { A: '1' } });
    const moved = `${h.storeDir}.away`;
    await rename(h.storeDir, moved);
    await writeFile(h.storeDir, 'the store directory is gone');
    try {
      const res = await post('admin', { name: 'during-outage', values: { A: 'x' } });
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('cluster_unavailable');
      expect(res.body.error).toMatch(/cannot be reached/);
      const rows = await secretRows(h.db.adminUrl);
      expect(rows.map((r) => r.name)).toEqual([...rowsBefore.map((r) => r.name), 'survives-outage']);
      const outbox = await adminQuery(h.db.adminUrl, 'select count(*)::int as n from secrets.outbox');
      expect(outbox[0].n).toBe(outboxBefore[0].n + 1); // the survivor's created event only

      // A delete that cannot reach the store leaves the secret as it was.
      const del = await http()
        .delete(`${h.base}/${existing.body.id}`)
        .set(IDENTITY_HEADER, await h.token('admin'));
      expect(del.status).toBe(503);
      expect(
        (
          await http()
            .get(`${h.base}/${existing.body.id}`)
            .set(IDENTITY_HEADER, await h.token('viewer'))
        ).status,
      ).toBe(200);
    } finally {
      await rm(h.storeDir);
      await rename(moved, h.storeDir);
    }
    // Nothing of the failed create reached the store either.
    const files = await readdir(path.join(h.storeDir, `vpc-${h.vpcId}`));
    const ids = new Set((await secretRows(h.db.adminUrl)).map((r) => `${r.id}.secret`));
    expect(files.filter((f) => !ids.has(f))).toEqual([]);
    expect((await post('admin', { name: 'during-outage', values: { A: 'x' } })).status).toBe(201);
  });

  it('serves VPC usage to Pier services only', async () => {
    const svc = await h.serviceToken('auth');
    const res = await http().get(`/internal/vpcs/${h.vpcId}/usage`).set(IDENTITY_HEADER, svc);
    expect(res.status).toBe(200);
    const rows = (await secretRows(h.db.adminUrl)).filter((r) => r.vpc_id === h.vpcId);
    expect(res.body).toEqual({ count: rows.length });
    expect((await http().get(`/internal/vpcs/${crypto.randomUUID()}/usage`).set(IDENTITY_HEADER, svc)).body).toEqual({ count: 0 });
    expect(
      (
        await http()
          .get(`/internal/vpcs/${h.vpcId}/usage`)
          .set(IDENTITY_HEADER, await h.token('owner'))
      ).status,
    ).toBe(403);
  });

  it('documents in the OpenAPI that values are never returned', async () => {
    const res = await http().get('/internal/openapi');
    const ops = res.body['/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/secrets'];
    expect(ops.get.summary).toMatch(/Values are never returned/);
    expect(ops.post['x-pier-role']).toBe('Admin');
    expect(ops.post.requestBody.content['application/json'].schema.properties.values.description).toMatch(/write-only/);
    expect(res.body['/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/secrets/{secretID}'].get.summary).toMatch(/never returned/);
    expect(JSON.stringify(ops.get.responses)).not.toContain('"values"');
  });
});
