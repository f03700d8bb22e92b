// Lists and lookups: keyset pages, cursors this API never handed out, and rows a
// provision in flight has written but not yet made visible.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { importIdentityKey, signIdentity } from '@pier/kit';
import { adminQuery, startDatabases, type Databases } from './support.ts';

let h: Databases;
beforeAll(async () => {
  // A long grace: the invisible rows this file writes must stay what they are, not be undone.
  h = await startDatabases({ PIER_DATABASES_PENDING_GRACE_SECONDS: '600' });
});
afterAll(async () => {
  await h?.stop();
});

/** A database row as a provision writes it, without its cluster objects. */
async function insertRow(name: string, provisioned: boolean): Promise<string> {
  const id = randomUUID();
  await adminQuery(
    h.db.adminUrl,
    `insert into databases.databases (id, short_id, workspace_id, vpc_id, name, engine, instance_type, storage_gb, version, replicas, external_access_enabled, status, provisioned)
     values ($1, $2, $3, $4, $5, 'postgresql', 'svc.nano', 10, '15', 0, false, 'creating', $6)`,
    [id, id.slice(0, 8), h.workspaceId, h.vpcId, name, provisioned],
  );
  return id;
}

describe('lists', () => {
  it('page by keyset, and refuse a cursor they never handed out with 400 invalid_cursor', async () => {
    const ids = [];
    for (const name of ['page-a', 'page-b', 'page-c']) ids.push(await insertRow(name, true));
    const first = await h.request('GET', `${h.base}?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.items.map((d: { id: string }) => d.id)).toEqual(ids.slice(0, 2));
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await h.request('GET', `${h.base}?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body.items.map((d: { id: string }) => d.id)).toEqual(ids.slice(2));
    expect(second.body.next_cursor).toBeNull();

    // Found by a forged cursor: its position reached PostgreSQL as a uuid and came back 500.
    const forged = Buffer.from(JSON.stringify(['2024-01-01T00:00:00Z', 'not-a-uuid'])).toString('base64url');
    const res = await h.request('GET', `${h.base}?cursor=${forged}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.stringContaining('cursor'), code: 'invalid_cursor', field: 'cursor' });
    for (const bad of ['%%%', Buffer.from(`99999999999999999|${randomUUID()}`).toString('base64url')]) {
      expect((await h.request('GET', `${h.base}?cursor=${bad}`)).status).toBe(400);
    }
    expect((await h.request('GET', `${h.base}?limit=201`)).body.field).toBe('limit');
  });

  it('never show a database whose provisioning has not committed, yet its name is taken', async () => {
    const ghost = await insertRow('in-flight', false);
    const listed = await h.request('GET', `${h.base}?limit=200`);
    expect(listed.body.items.map((d: { name: string }) => d.name)).not.toContain('in-flight');
    expect((await h.request('GET', `${h.base}/${ghost}`)).status).toBe(404);
    expect((await h.request('PATCH', `${h.base}/${ghost}`, { name: 'other' })).status).toBe(404);
    expect((await h.request('DELETE', `${h.base}/${ghost}`)).status).toBe(404);
    const clash = await h.request('POST', h.base, { name: 'in-flight' });
    expect(clash.status).toBe(409);
    expect(clash.body.code).toBe('already_exists');
    expect(await adminQuery(h.db.adminUrl, `select count(*)::int as n from databases.databases where name = 'in-flight'`)).toEqual([{ n: 1 }]);
    // It holds cluster objects, so auth must not delete the VPC under it.
    const token = await signIdentity(await importIdentityKey(h.keys.privateJwk), { kind: 'service', subject: 'auth' }, 60);
    const usage = await h.request('GET', `/internal/vpcs/${h.vpcId}/usage`, undefined, { token });
    expect(usage.body.count).toBe(4);
  });
});
