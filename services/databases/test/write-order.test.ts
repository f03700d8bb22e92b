// Every change is written pending, the cluster is called outside any transaction, and the
// outcome is committed with its event. With the Docker engine taken away (a relay in
// front of its socket, cut), each write answers 503 and leaves the records exactly as
// they were: no pending state, no event.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Docker from 'dockerode';
import { socketLink } from '@pier/testing';
import { adminQuery, docker, startDatabases, testDockerCluster, until, type Databases } from './support.ts';

const link = socketLink({ path: '/var/run/docker.sock' });
let h: Databases;
let one: string;
let id: string;

beforeAll(async () => {
  await link.up();
  h = await startDatabases(
    {},
    {
      cluster: (installation) => testDockerCluster({ docker: new Docker({ socketPath: link.address }), installation }),
    },
  );
  const res = await h.request('POST', h.base, { name: 'steady' });
  expect(res.status).toBe(202);
  id = res.body.id;
  one = `${h.base}/${id}`;
  await until(
    () => h.request('GET', one).then((r) => r.body.status),
    (s) => s === 'running',
    60_000,
  );
});

afterAll(async () => {
  await link.up().catch(() => undefined);
  await h?.stop();
  await link.down();
});

const row = async () =>
  (
    await adminQuery(
      h.db.adminUrl,
      'select name, instance_type, external_access_enabled, pending_change, pending_since from databases.databases where id = $1',
      [id],
    )
  )[0];
const rules = () => adminQuery(h.db.adminUrl, 'select cidr, state from databases.allowlist_rules where database_id = $1 order by created_at', [id]);
const events = async () =>
  (await adminQuery(h.db.adminUrl, `select kind from databases.outbox where payload->>'resource_id' = $1 order by id`, [id])).map((r) => r.kind);

describe('with the cluster unreachable', () => {
  it('refuses a resize or an external-access toggle with 503 and changes nothing, the name included', async () => {
    const before = await row();
    const eventsBefore = await events();
    await link.down();
    for (const body of [{ external_access_enabled: true }, { name: 'renamed', instance_type: 'svc.micro' }]) {
      const res = await h.request('PATCH', one, body);
      expect(res.status, JSON.stringify(body)).toBe(503);
      expect(res.body.code).toBe('cluster_unavailable');
      expect(await row()).toEqual(before);
    }
    expect(before.pending_change).toBeNull();
    expect(await events()).toEqual(eventsBefore);
    // A rename alone is no cluster change: it needs no cluster.
    const renamed = await h.request('PATCH', one, { name: 'renamed' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe('renamed');
    expect((await events()).at(-1)).toBe('database.updated');
    await link.up();
  });

  it('refuses an allowlist rule with 503, leaving no rule behind', async () => {
    await link.down();
    const res = await h.request('POST', `${one}/ip-allowlist`, { cidr: '198.51.100.0/24' });
    expect(res.status).toBe(503);
    expect(await rules()).toEqual([]);
    await link.up();
    const added = await h.request('POST', `${one}/ip-allowlist`, { cidr: '198.51.100.0/24' });
    expect(added.status).toBe(201);
    expect(await rules()).toEqual([{ cidr: '198.51.100.0/24', state: 'active' }]);
  });

  it('refuses removing a rule with 503, keeping it in force and listed', async () => {
    const [rule] = (await h.request('GET', `${one}/ip-allowlist`)).body.items;
    await link.down();
    const res = await h.request('DELETE', `${one}/ip-allowlist/${rule.id}`);
    expect(res.status).toBe(503);
    expect(await rules()).toEqual([{ cidr: '198.51.100.0/24', state: 'active' }]);
    await link.up();
    expect((await h.request('GET', `${one}/ip-allowlist`)).body.items.map((r: { id: string }) => r.id)).toEqual([rule.id]);
    expect((await h.request('DELETE', `${one}/ip-allowlist/${rule.id}`)).status).toBe(204);
    expect(await rules()).toEqual([]);
    expect(await events()).toEqual(expect.arrayContaining(['database.allowlist_rule_added', 'database.allowlist_rule_removed']));
  });

  it('refuses a backup, a restore, a fork, a replica and a backup delete with 503, writing nothing', async () => {
    await link.up();
    const taken = await h.request('POST', `${one}/backups`, {});
    expect(taken.status).toBe(202);
    await until(
      () => h.request('GET', `${one}/backups`).then((r) => r.body.items?.[0]?.status),
      (st) => st === 'completed',
      90_000,
    );
    const backups = () => adminQuery(h.db.adminUrl, 'select name, started, deleting_since from databases.backups order by created_at');
    const databases = () => adminQuery(h.db.adminUrl, 'select id from databases.databases order by created_at');
    const [rowsBefore, dbsBefore, eventsBefore] = [await backups(), await databases(), await events()];

    await link.down();
    for (const [method, path, body] of [
      ['POST', `${one}/backups`, {}],
      ['POST', `${one}/backups/restore`, { name: 'copy' }],
      ['POST', `${one}/fork`, { name: 'copy' }],
      ['PATCH', `${one}/replicas`, { replicas: 1 }],
      ['DELETE', `${one}/backups/${taken.body.name}`, undefined],
    ] as const) {
      const res = await h.request(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(503);
      expect(await backups()).toEqual(rowsBefore);
      expect(await databases()).toEqual(dbsBefore);
    }
    expect((await row()).pending_change).toBeNull();
    expect(await events()).toEqual(eventsBefore);
    await link.up();
  }, 120_000);

  it('refuses a delete with 503 and keeps the database', async () => {
    await link.down();
    const res = await h.request('DELETE', one);
    expect(res.status).toBe(503);
    await link.up();
    expect((await h.request('GET', one)).body.status).toBe('running');
  });

  it('queues changes to one database instead of running them at once', async () => {
    // Both need the cluster; the second waits for the first and sees its result.
    const [a, b] = await Promise.all([
      h.request('PATCH', one, { instance_type: 'svc.micro' }),
      h.request('POST', `${one}/ip-allowlist`, { cidr: '203.0.113.9' }),
    ]);
    expect([a.status, b.status]).toEqual([200, 201]);
    const server = await docker.getContainer(`pier-db-${id}`).inspect();
    expect(server.HostConfig.Memory).toBe(512 * 1024 * 1024);
    expect(await row()).toMatchObject({ instance_type: 'svc.micro', pending_change: null });
    expect(await rules()).toEqual([{ cidr: '203.0.113.9/32', state: 'active' }]);
  });
});
