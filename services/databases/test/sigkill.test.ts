// What a crash leaves half done is finished or undone when the service starts again. The
// service runs as its own process; a crash point (PIER_CRASH_AT) SIGKILLs it between the
// cluster call and the commit that records its outcome, and the next process, on the same
// records and the same Docker engine, must converge: no row left in a transitional state,
// no container or volume without a record.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateIdentityKeys } from '@pier/kit';
import { createTestDatabase, deathAt, infra } from '@pier/testing';
import { installationObjects, pgHba, spawnDatabases, until, type DatabasesProcess, type TestDatabase } from './support.ts';

let db: TestDatabase;
let p: DatabasesProcess;
let installation: string;
/** The database that lives through the update, allowlist and teardown crashes. */
let id: string;
const one = () => `${p.base}/${id}`;

beforeAll(async () => {
  db = await createTestDatabase(infra().postgresAdminUrl);
  p = await spawnDatabases(await generateIdentityKeys(), db);
});

afterAll(async () => {
  await p?.stop();
  await db?.drop();
}, 60_000);

/** Starts a process armed to die at `point`, runs `act` (whose connection may drop), and waits for the death. */
async function crashAt(point: string, act: () => Promise<unknown>): Promise<void> {
  await p.proc?.stop();
  const armed = await p.spawn({ PIER_CRASH_AT: point });
  installation ??= (await p.sql('select id from databases.installation'))[0].id;
  const how = await deathAt(armed, point, act);
  // tsx relays its child's death by SIGKILL as exit status 128 + 9.
  expect([137, 'SIGKILL'], armed.output()).toContain(how);
}

const objects = () => installationObjects(installation, p.vpcId);
const events = async (resourceId: string) =>
  (await p.sql(`select kind, payload->'data' as data from databases.outbox where payload->>'resource_id' = $1 order by id`, [resourceId])) as {
    kind: string;
    data: any;
  }[];
const rules = () => p.sql('select cidr, state from databases.allowlist_rules where database_id = $1', [id]);

/**
 * What every crash must come back to: no database unprovisioned, `creating`, `deleting` or
 * with a change pending, no rule `adding` or `removing`, no backup unstarted or being
 * deleted, and no container or volume of this installation but a live database's.
 */
async function converged(): Promise<void> {
  expect(
    await p.sql(`select id, status from databases.databases
      where not provisioned or pending_change is not null or status in ('creating', 'deleting')`),
  ).toEqual([]);
  expect(await p.sql(`select cidr, state from databases.allowlist_rules where state <> 'active'`)).toEqual([]);
  expect(await p.sql('select name from databases.backups where not started or deleting_since is not null')).toEqual([]);
  const live = (await p.sql(`select id from databases.databases where status <> 'deleted'`)).map((r) => r.id as string);
  const { containers, volumes } = await objects();
  expect([...containers, ...volumes].filter((name) => !live.some((dbId) => name.startsWith(`pier-db-${dbId}`)))).toEqual([]);
}
const status = () => p.call('GET', one()).then((r) => r.body);

describe('SIGKILL of databases in the middle of an operation', () => {
  it('between the cluster call and the commit of a provision: undone, nothing left in the cluster', async () => {
    await crashAt('databases.provision.applied', () => p.call('POST', p.base, { name: 'cut-short' }));
    const [row] = await p.sql('select id, provisioned from databases.databases');
    expect(row.provisioned).toBe(false);
    expect((await objects()).containers).toEqual([`pier-db-${row.id}`, `pier-db-${row.id}-pooler`]);

    await p.spawn();
    await until(
      () => p.sql('select id from databases.databases'),
      (rows) => rows.length === 0,
    );
    expect(await objects()).toEqual({ containers: [], volumes: [] });
    expect(await events(row.id)).toEqual([]);
    expect((await p.call('GET', p.base)).body).toEqual({ items: [], next_cursor: null });
    await converged();
  }, 120_000);

  it('after the commit of a provision, before the answer: the database stands and the reconciler publishes it running', async () => {
    // The name is free again.
    await crashAt('databases.provision.committed', () => p.call('POST', p.base, { name: 'cut-short' }));
    const [left] = await p.sql('select id, provisioned, status from databases.databases');
    expect(left).toMatchObject({ provisioned: true, status: 'creating' });
    id = left.id;

    await p.spawn();
    // From the records, not through the API (a read resyncs): the reconciler must get there unasked.
    await until(
      () => p.sql('select status from databases.databases where id = $1', [id]),
      (rows) => rows[0].status === 'running',
      60_000,
    );
    expect((await events(id)).map((e) => e.kind)).toEqual(['database.created', 'database.status_changed']);
    expect((await objects()).containers).toEqual([`pier-db-${id}`, `pier-db-${id}-pooler`]);
    // No scheduled backup while the backup crashes below count them.
    expect((await p.call('PATCH', `${one()}/backups/schedule`, { enabled: false })).status).toBe(200);
    await converged();
  }, 120_000);

  it('between the cluster call and the commit of an external-access toggle: finished', async () => {
    await crashAt('databases.update.applied', () => p.call('PATCH', one(), { external_access_enabled: true, storage_gb: 20 }));
    const [left] = await p.sql('select external_access_enabled, pending_change from databases.databases where id = $1', [id]);
    expect(left).toEqual({
      external_access_enabled: false,
      pending_change: { instanceType: 'svc.nano', storageGb: 20, externalAccessEnabled: true, replicas: 0 },
    });

    await p.spawn();
    await until(
      () => p.sql('select pending_change from databases.databases where id = $1', [id]),
      (rows) => rows[0].pending_change === null,
    );
    expect(await status()).toMatchObject({ status: 'running', external_access_enabled: true, storage_gb: 20 });
    const conn = (await p.call('GET', `${one()}/connection`)).body;
    expect(conn.external_port).toEqual(expect.any(Number));
    expect((await events(id)).filter((e) => e.kind === 'database.updated').map((e) => e.data)).toEqual([
      expect.objectContaining({ external_access_enabled: true, storage_gb: 20 }),
    ]);
    await converged();
  }, 120_000);

  it('between the cluster call and the commit of an allowlist rule: undone, the rule out of force', async () => {
    await crashAt('databases.allowlist.add.applied', () => p.call('POST', `${one()}/ip-allowlist`, { cidr: '198.51.100.0/24' }));
    expect(await rules()).toEqual([{ cidr: '198.51.100.0/24', state: 'adding' }]);
    expect(await pgHba(id)).toContain('198.51.100.0/24'); // the crash came after the cluster had it

    await p.spawn();
    await until(rules, (rows) => rows.length === 0);
    expect(await pgHba(id)).not.toContain('198.51.100.0/24');
    expect((await p.call('GET', `${one()}/ip-allowlist`)).body.items).toEqual([]);
    expect((await events(id)).map((e) => e.kind)).not.toContain('database.allowlist_rule_added');
    await converged();
  }, 120_000);

  it('between the cluster call and the commit of a rule removal: finished', async () => {
    const added = await p.call('POST', `${one()}/ip-allowlist`, { cidr: '203.0.113.0/24' });
    expect(added.status).toBe(201);
    expect(await pgHba(id)).toContain('203.0.113.0/24');

    await crashAt('databases.allowlist.remove.applied', () => p.call('DELETE', `${one()}/ip-allowlist/${added.body.id}`));
    expect(await rules()).toEqual([{ cidr: '203.0.113.0/24', state: 'removing' }]);

    await p.spawn();
    await until(rules, (rows) => rows.length === 0);
    expect(await pgHba(id)).not.toContain('203.0.113.0/24');
    expect((await p.call('GET', `${one()}/ip-allowlist`)).body.items).toEqual([]);
    const removed = (await events(id)).filter((e) => e.kind === 'database.allowlist_rule_removed');
    expect(removed.map((e) => e.data)).toEqual([{ rule_id: added.body.id, cidr: '203.0.113.0/24' }]);
    await converged();
  }, 120_000);

  it('between starting a backup and recording it: finished, the one backup of that name', async () => {
    await crashAt('databases.backup.started', () => p.call('POST', `${one()}/backups`));
    const [left] = await p.sql('select name, started from databases.backups where database_id = $1', [id]);
    expect(left.started).toBe(false);

    await p.spawn();
    const items = await until(
      () => p.call('GET', `${one()}/backups`).then((r) => r.body.items),
      (l) => l?.length === 1 && l[0].status === 'completed',
      90_000,
    );
    expect(items[0]).toMatchObject({ name: left.name, method: 'manual' });
    const started = (await events(id)).filter((e) => e.kind === 'database.backup_started');
    expect(started.map((e) => e.data.backup_name)).toEqual([left.name]);
    await converged();
  }, 120_000);

  it('between removing a backup from the repository and deleting its record: finished', async () => {
    const [first] = (await p.call('GET', `${one()}/backups`)).body.items;
    // A newer one first: PostgreSQL's newest completed backup is not deleted.
    const newer = await p.call('POST', `${one()}/backups`);
    expect(newer.status).toBe(202);
    await until(
      () => p.call('GET', `${one()}/backups`).then((r) => r.body.items),
      (l) => l.length === 2 && l.every((b: { status: string }) => b.status === 'completed'),
      90_000,
    );

    await crashAt('databases.backup.deleted', () => p.call('DELETE', `${one()}/backups/${first.name}`));
    const [left] = await p.sql('select deleting_since from databases.backups where name = $1', [first.name]);
    expect(left.deleting_since).not.toBeNull();

    await p.spawn();
    await until(
      () => p.sql('select name from databases.backups where name = $1', [first.name]),
      (rows) => rows.length === 0,
    );
    expect((await p.call('GET', `${one()}/backups`)).body.items.map((b: { name: string }) => b.name)).toEqual([newer.body.name]);
    const deleted = (await events(id)).filter((e) => e.kind === 'database.backup_deleted');
    expect(deleted.map((e) => e.data.backup_name)).toEqual([first.name]);
    await converged();
  }, 180_000);

  it('between deleting from the cluster and the soft delete: the teardown is finished', async () => {
    await crashAt('databases.teardown.deleted', () => p.call('DELETE', one()));
    const [left] = await p.sql('select status, deleted_at from databases.databases where id = $1', [id]);
    expect(left).toEqual({ status: 'deleting', deleted_at: null });
    expect(await objects()).toEqual({ containers: [], volumes: [] });

    await p.spawn();
    await until(
      () => p.sql('select status, deleted_at from databases.databases where id = $1', [id]),
      (rows) => rows[0].status === 'deleted',
    );
    expect((await p.call('GET', one())).status).toBe(404);
    const statuses = (await events(id)).filter((e) => e.kind === 'database.status_changed').map((e) => e.data.status);
    expect(statuses.slice(-2)).toEqual(['deleting', 'deleted']);
    expect(
      await p.sql(`select count(*)::int as n from databases.databases where status <> 'deleted' or not provisioned or pending_change is not null`),
    ).toEqual([{ n: 0 }]);
    await converged();
  }, 120_000);
});

// A keyed provision retried after the kill: one database, one set of containers, and the
// retry answers 202 as the first attempt would have (kit's Idempotency-Key).
describe('a keyed provision retried after SIGKILL', () => {
  for (const [point, when] of [
    ['databases.provision.applied', 'between the cluster call and the commit'],
    ['databases.provision.committed', 'after the commit, before the answer'],
  ] as const) {
    it(`killed ${when}: the retry answers 202, and there is one database with one set of objects`, async () => {
      const name = `keyed-${point.split('.').pop()}`;
      const key = randomUUID();
      await crashAt(point, () => p.call('POST', p.base, { name }, { 'idempotency-key': key }));
      await p.spawn();

      const retry = await p.call('POST', p.base, { name }, { 'idempotency-key': key });
      expect(retry.status, JSON.stringify(retry.body)).toBe(202);
      expect(retry.body).toMatchObject({ name, engine: 'postgresql' });
      const again = await p.call('POST', p.base, { name }, { 'idempotency-key': key });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body.id).toBe(retry.body.id);

      expect(await p.sql('select id, provisioned from databases.databases where name = $1', [name])).toEqual([{ id: retry.body.id, provisioned: true }]);
      const mine = async () => (await objects()).containers.filter((c) => c.startsWith(`pier-db-${retry.body.id}`));
      await until(mine, (c) => c.length === 2, 60_000);
      expect(await mine()).toEqual([`pier-db-${retry.body.id}`, `pier-db-${retry.body.id}-pooler`]);
      await until(
        () => p.call('GET', `${p.base}/${retry.body.id}`).then((r) => r.body),
        (d) => d.status === 'running',
        90_000,
      );
      expect((await p.call('DELETE', `${p.base}/${retry.body.id}`)).status).toBe(202);
      await until(
        async () => ({ left: await mine(), status: (await p.sql('select status from databases.databases where id = $1', [retry.body.id]))[0]?.status }),
        (d) => d.left.length === 0 && d.status !== 'deleting',
        60_000,
      );
      // Nothing of the dead attempt is left either: every container and volume is a live database's.
      await converged();
    }, 240_000);
  }
});
