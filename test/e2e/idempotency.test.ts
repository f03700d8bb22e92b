// Safe retries through the gateway: a write sent with an Idempotency-Key runs once, a retry
// gets the first answer (Idempotent-Replayed: true) and causes nothing, and a key is never
// taken for another request. The crash half (a retry after SIGKILL) is in each service's
// SIGKILL suites (`sigkill*.test.ts` of compute, databases and secrets).
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createPierClient, unwrap } from '@pier/sdk';
import { removeVpcObjects } from '@pier/testing';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';

let p: Platform;
let owner: Api;
let ws: string;
let base: string;

beforeAll(async () => {
  p = await startPlatform();
  owner = p.api(p.bootstrap.token);
  ws = p.bootstrap.workspaceId;
  base = `/api/v1/workspaces/${ws}/vpcs/${p.bootstrap.vpcId}`;
}, 120_000);

afterAll(async () => {
  await p?.stop();
  if (p) await removeVpcObjects(p.bootstrap.vpcId);
});

const keyed = (key: string) => ({ headers: { 'idempotency-key': key } });

async function adminQuery<T extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: p.database.adminUrl });
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

describe('Idempotency-Key', () => {
  it('a retry gets the first answer, marked replayed, and creates nothing more', async () => {
    const key = randomUUID();
    const first = await owner.post(`${base}/secrets`, { name: 'once', values: { A: '1' } }, keyed(key));
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await owner.post(`${base}/secrets`, { values: { A: '1' }, name: 'once' }, keyed(key));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const list = await owner.get(`${base}/secrets`);
    expect(list.body.items.filter((s: { name: string }) => s.name === 'once')).toHaveLength(1);
    // Without the header, behaviour is unchanged: the name is taken.
    expect((await owner.post(`${base}/secrets`, { name: 'once', values: { A: '1' } })).status).toBe(409);
  });

  it('the same key on another request is a 422, and runs nothing', async () => {
    const key = randomUUID();
    expect((await owner.post(`${base}/secrets`, { name: 'first-body', values: { A: '1' } }, keyed(key))).status).toBe(201);
    const otherBody = await owner.post(`${base}/secrets`, { name: 'second-body', values: { A: '1' } }, keyed(key));
    expect(otherBody.status).toBe(422);
    expect(otherBody.body).toEqual({ error: expect.stringContaining('different request'), code: 'idempotency_key_reused' });
    const victim = await owner.post(`${base}/secrets`, { name: 'not-deleted', values: { A: '1' } });
    const otherPath = await owner.delete(`${base}/secrets/${victim.body.id}`, keyed(key));
    expect(otherPath.status).toBe(422);
    expect((await owner.get(`${base}/secrets/${victim.body.id}`)).status).toBe(200);
    const names = (await owner.get(`${base}/secrets`)).body.items.map((s: { name: string }) => s.name);
    expect(names).not.toContain('second-body');
  });

  it('the same key sent to another service is a 422 there, and runs nothing; the first service still replays it', async () => {
    // Each service keeps its own keys: the gateway remembers which service a key went to first.
    const key = randomUUID();
    const first = await owner.post(`${base}/secrets`, { name: 'cross-first', values: { A: '1' } }, keyed(key));
    expect(first.status).toBe(201);
    const elsewhere = await owner.post(`${base}/services`, { name: 'cross-second' }, keyed(key));
    expect(elsewhere.status).toBe(422);
    expect(elsewhere.body).toEqual({ error: expect.stringContaining('different request'), code: 'idempotency_key_reused' });
    const noVpcPath = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'cross-key' }, keyed(key));
    expect(noVpcPath.status).toBe(422);
    const services = (await owner.get(`${base}/services`)).body.items.map((s: { name: string }) => s.name);
    expect(services).not.toContain('cross-second');
    const keys = (await owner.get(`/api/v1/workspaces/${ws}/api-keys`)).body.items.map((k: { name: string }) => k.name);
    expect(keys).not.toContain('cross-key');
    const again = await owner.post(`${base}/secrets`, { name: 'cross-first', values: { A: '1' } }, keyed(key));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    // Keys are per workspace, as in each service: another workspace may use the same one.
    const other = await owner.post('/api/v1/workspaces', { name: `cross-${key.slice(0, 8)}` });
    expect(other.status).toBe(201);
    expect((await owner.post(`/api/v1/workspaces/${other.body.id}/api-keys`, { name: 'cross-key' }, keyed(key))).status).toBe(201);
  });

  it('a retry while the first is still running is a 409, and the first one still answers', async () => {
    // The first request's lock, taken by hand as compute would take it while a create runs.
    const key = randomUUID();
    const lock = createHash('sha256').update(`compute\0workspace:${ws}\0${key}`).digest().readBigInt64BE(0);
    const holder = new pg.Client({ connectionString: p.database.adminUrl });
    await holder.connect();
    try {
      await holder.query('select pg_advisory_lock($1)', [lock.toString()]);
      const busy = await owner.post(`${base}/services`, { name: 'held' }, keyed(key));
      expect(busy.status).toBe(409);
      expect(busy.body.code).toBe('idempotency_key_in_use');
      expect(busy.headers.get('retry-after')).toBe('1');
    } finally {
      await holder.end();
    }
    // Its connection gone, the lock is free: the key runs.
    const heldCreate = await owner.post(`${base}/services`, { name: 'held' }, keyed(key));
    expect(heldCreate.status, JSON.stringify(heldCreate.body)).toBe(201);

    // Ten at once with one key: one runs, the others wait their turn or are told it is in use.
    const burstKey = randomUUID();
    const answers = await Promise.all(Array.from({ length: 10 }, () => owner.post(`${base}/secrets`, { name: 'burst', values: { A: '1' } }, keyed(burstKey))));
    expect(answers.map((a) => [a.status, a.body.code ?? 'ok'])).toEqual(answers.map((a) => (a.status === 201 ? [201, 'ok'] : [409, 'idempotency_key_in_use'])));
    expect(answers.filter((a) => a.status === 201 && a.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    for (const a of answers.filter((x) => x.status === 409)) expect(a.body.code).toBe('idempotency_key_in_use');
    const burst = (await owner.get(`${base}/secrets`)).body.items.filter((s: { name: string }) => s.name === 'burst');
    expect(burst).toHaveLength(1);
  });

  it('errors are replayed too, a DELETE replays its 204, and a bad key is a 400', async () => {
    const key = randomUUID();
    const nobody = randomUUID();
    const missing = await owner.delete(`${base}/secrets/${nobody}`, keyed(key));
    expect(missing.status).toBe(404);
    const replayed = await owner.delete(`${base}/secrets/${nobody}`, keyed(key));
    expect(replayed.status).toBe(404);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toEqual(missing.body);
    expect((await owner.delete(`${base}/secrets/${randomUUID()}`, keyed(key))).status).toBe(422); // another path: another request

    const made = await owner.post(`${base}/secrets`, { name: 'to-delete', values: { A: '1' } });
    const deleteKey = randomUUID();
    expect((await owner.delete(`${base}/secrets/${made.body.id}`, keyed(deleteKey))).status).toBe(204);
    const deletedAgain = await owner.delete(`${base}/secrets/${made.body.id}`, keyed(deleteKey));
    expect(deletedAgain.status).toBe(204);
    expect(deletedAgain.headers.get('idempotent-replayed')).toBe('true');
    expect((await owner.delete(`${base}/secrets/${made.body.id}`)).status).toBe(404);

    for (const bad of ['x'.repeat(256), 'tab\there', 'é']) {
      const res = await owner.post(`${base}/secrets`, { name: 'bad-key', values: { A: '1' } }, keyed(bad));
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_idempotency_key');
    }
    // Reads ignore the header.
    expect((await owner.get(`${base}/secrets`, keyed('x'.repeat(300)))).status).toBe(200);
  });

  it('a new API key is replayed without the key itself, which is never stored', async () => {
    const key = randomUUID();
    const first = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'ci' }, keyed(key));
    expect(first.status).toBe(201);
    expect(first.body.key).toEqual(expect.any(String));
    const again = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'ci' }, keyed(key));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual({ ...first.body, key: null });
    const stored = await adminQuery<{ body: string }>('select body::text from auth.idempotency_keys');
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.map((r) => r.body).join('\n')).not.toContain(first.body.key);
    // The key works, and only one was made.
    expect((await p.api(first.body.key).get(`/api/v1/workspaces/${ws}/api-keys`)).status).toBe(200);
    const keys = (await owner.get(`/api/v1/workspaces/${ws}/api-keys`)).body.items.filter((k: { name: string }) => k.name === 'ci');
    expect(keys).toHaveLength(1);
  });

  it('keys are kept 24 hours, per workspace', async () => {
    const key = randomUUID();
    expect((await owner.post(`${base}/secrets`, { name: 'aged', values: { A: '1' } }, keyed(key))).status).toBe(201);
    await adminQuery(`update secrets.idempotency_keys set created_at = now() - interval '25 hours' where key = $1`, [key]);
    // Expired: the same key is a new request, which meets the existing name.
    const after = await owner.post(`${base}/secrets`, { name: 'aged', values: { A: '1' } }, keyed(key));
    expect(after.status).toBe(409);
    expect(after.headers.get('idempotent-replayed')).toBeNull();

    // Another workspace's key of the same value is its own.
    const other = await owner.post('/api/v1/workspaces', { name: 'second-home' });
    expect(other.status).toBe(201);
    const shared = randomUUID();
    expect((await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'same-key' }, keyed(shared))).status).toBe(201);
    const there = await owner.post(`/api/v1/workspaces/${other.body.id}/api-keys`, { name: 'same-key' }, keyed(shared));
    expect(there.status).toBe(201);
    expect(there.headers.get('idempotent-replayed')).toBeNull();
  });

  it('the SDK sends a key with each write and retries a lost answer safely', async () => {
    // The connection drops after the API answered the first attempt (as a proxy cut off):
    // the SDK sends the call again, with the same key, and gets the first answer.
    const sent: (string | null)[] = [];
    let calls = 0;
    const lossy: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      sent.push(request.headers.get('idempotency-key'));
      const response = await fetch(request);
      if (calls++ === 0) {
        await response.arrayBuffer();
        throw new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } });
      }
      return response;
    };
    const sdk = createPierClient({ baseUrl: p.gatewayUrl, token: p.bootstrap.token, fetch: lossy });
    const created = await unwrap(
      sdk.POST('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/secrets', {
        params: { path: { workspaceID: ws, vpcID: p.bootstrap.vpcId } },
        body: { name: 'lost-answer', values: { A: '1' } },
      }),
    );
    expect(created.name).toBe('lost-answer');
    expect(sent).toHaveLength(2);
    expect(sent[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[1]).toBe(sent[0]);
    const named = (await owner.get(`${base}/secrets`)).body.items.filter((s: { name: string }) => s.name === 'lost-answer');
    expect(named).toHaveLength(1);
  });

  it('the OpenAPI document offers the header on every write', async () => {
    const doc = (await owner.get('/api/v1/openapi.json')).body;
    let writes = 0;
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, { parameters?: { name: string; in: string }[] }>>)) {
      for (const [method, op] of Object.entries(ops)) {
        if (method === 'get' || typeof op !== 'object') continue;
        writes++;
        expect(
          op.parameters?.some((x) => x.name === 'Idempotency-Key' && x.in === 'header'),
          `${method} ${path}`,
        ).toBe(true);
      }
    }
    expect(writes).toBeGreaterThan(30);
  });
});
