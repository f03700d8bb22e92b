// PostgreSQL backups on the docker adapter, for real: pgBackRest full backups and a WAL
// archive per database in the run's repository volume, restores into new databases
// (named backups and points in time), forks, and the checks a user would make of each
// with the real psql.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { psql, run } from '@pier/testing';
import { adminQuery, databaseChecks, startDatabases, until, type Databases } from './support.ts';

let h: Databases;
let src: string;
let url: string;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether database `id` has a backup repository (its own volume). */
async function repositoryHolds(id: string): Promise<boolean> {
  const r = await run('docker', ['volume', 'ls', '-q', '--filter', `name=^pier-db-${id}-backups$`]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.split('\n').includes(`pier-db-${id}-backups`);
}

const rows = async (u: string) => {
  const r = await psql(u, 'select v from t order by v');
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.trim().split('\n').filter(Boolean);
};
const insert = async (u: string, v: string) => expect((await psql(u, `insert into t values ('${v}')`)).code).toBe(0);

let one: (id: string) => string;
let running: (id: string) => Promise<void>;
let externalUrl: (id: string) => Promise<string>;
let backups: (id?: string) => Promise<any>;
let completed: (name: string, id?: string) => Promise<any>;

beforeAll(async () => {
  h = await startDatabases({ PIER_DATABASES_BACKUP_SCHEDULER_INTERVAL_MS: '500' });
  const c = databaseChecks(h);
  ({ one, running, externalUrl } = c);
  backups = (id = src) => c.backups(id);
  completed = (name, id = src) => c.completed(id, name);
  const res = await h.post(h.base, { name: 'orders' });
  expect(res.status).toBe(202);
  src = res.body.id;
  await running(src);
  url = await externalUrl(src);
  expect((await psql(url, 'create table t (v text primary key)')).code).toBe(0);
  await insert(url, 'before-backup');
}, 180_000);

afterAll(async () => {
  await h?.stop();
});

describe('backups of a postgresql database', () => {
  it('starts with none, no recovery window and the default daily schedule', async () => {
    expect(await backups()).toEqual({ items: [], next_cursor: null, recovery_window: null });
    const schedule = await h.request('PATCH', `${one(src)}/backups/schedule`, {});
    expect(schedule.status).toBe(200);
    expect(schedule.body).toMatchObject({ retention_count: 7, enabled: true });
    expect(schedule.body.schedule).toMatch(/^\d{1,2} [0-5] \* \* \*$/);
    expect(new Date(schedule.body.next_run_at).getTime()).toBeGreaterThan(Date.now());
    // Off while the tests count backups (a run due during them would be one more); the
    // schedule's own test turns it on.
    expect((await h.request('PATCH', `${one(src)}/backups/schedule`, { enabled: false })).body.enabled).toBe(false);
  });

  it('a restore with no completed backup triggers one and answers 409 backup_pending, then succeeds', async () => {
    const res = await h.post(`${one(src)}/backups/restore`, { name: 'too-early' });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('backup_pending');
    expect(res.body.error).toMatch(/retry shortly/);
    const list = await backups();
    expect(list.items).toHaveLength(1);
    expect(list.items[0]).toMatchObject({ status: 'running', method: 'triggered', database_id: src, size_bytes: null, completed_at: null });
    // Asked again while it runs: still pending, no second backup.
    const again = await h.post(`${one(src)}/backups/restore`, { name: 'too-early' });
    expect(again.body.code).toBe('backup_pending');
    expect((await backups()).items).toHaveLength(1);

    const done = await completed(list.items[0].name);
    expect(done.size_bytes).toBeGreaterThan(0);
    expect(new Date(done.completed_at).getTime()).toBeGreaterThanOrEqual(new Date(done.started_at).getTime());
    const window = (await backups()).recovery_window;
    expect(new Date(window.earliest).getTime()).toBeGreaterThan(new Date(done.completed_at).getTime());
    expect(new Date(window.latest).getTime()).toBeGreaterThan(Date.now() - 5000);

    const restored = await h.post(`${one(src)}/backups/restore`, { name: 'too-early' });
    expect(restored.status, JSON.stringify(restored.body)).toBe(202);
    expect(restored.body).toMatchObject({ status: 'creating', name: 'too-early', source: { kind: 'restore', database_id: src, backup_name: done.name } });
  }, 180_000);

  it('takes a backup on request, one at a time', async () => {
    const res = await h.post(`${one(src)}/backups`, {});
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ status: 'running', method: 'manual', database_id: src });
    expect(res.body.name).toMatch(/^\d{8}-\d{6}(-\d+)?$/);
    const second = await h.post(`${one(src)}/backups`, {});
    expect(second.status).toBe(409);
    expect(second.body.code).toBe('backup_in_progress');
    await completed(res.body.name);
  }, 120_000);

  it('restores a point in time: the new database has what was committed before it, not after', async () => {
    await insert(url, 'A');
    await sleep(1100);
    const target = new Date().toISOString();
    await sleep(1100);
    await insert(url, 'B');

    const res = await h.post(`${one(src)}/backups/restore`, { name: 'orders-pitr', target_time: target });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.source).toMatchObject({ kind: 'restore', target_time: target });
    expect(res.body.short_id).not.toBe(src.slice(0, 8));
    await running(res.body.id);
    const copy = await externalUrl(res.body.id);
    expect(await rows(copy)).toEqual(['A', 'before-backup']);
    // Its own credentials and database name.
    expect(copy).not.toBe(url);
    expect(new URL(copy).pathname).toBe(`/${res.body.short_id}`);
    expect(await rows(url)).toEqual(['A', 'B', 'before-backup']);
  }, 180_000);

  it('refuses a target outside the recovery window, naming target_time and the window', async () => {
    const { recovery_window: w } = await backups();
    for (const target_time of ['2001-01-01T00:00:00Z', new Date(Date.now() + 3600_000).toISOString()]) {
      const res = await h.post(`${one(src)}/backups/restore`, { name: 'outside', target_time });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'invalid_request', field: 'target_time' });
      expect(res.body.error).toContain(w.earliest);
    }
    const bad = await h.post(`${one(src)}/backups/restore`, { name: 'outside', target_time: 'yesterday' });
    expect(bad.body).toMatchObject({ field: 'target_time' });
    const unknown = await h.post(`${one(src)}/backups/restore`, { name: 'outside', backup_name: '19990101-000000' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('backup_not_found');
    const taken = await h.post(`${one(src)}/backups/restore`, { name: 'orders' });
    expect(taken.status).toBe(409);
    expect(taken.body.code).toBe('already_exists');
    const noName = await h.post(`${one(src)}/backups/restore`, {});
    expect(noName.body).toMatchObject({ field: 'name' });
  });

  it('restores a named backup to its own end, and the triggered restore holds what it backed up', async () => {
    const [newest, oldest] = (await backups()).items;
    const res = await h.post(`${one(src)}/backups/restore`, { name: 'orders-old', backup_name: oldest.name });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await running(res.body.id);
    expect(await rows(await externalUrl(res.body.id))).toEqual(['before-backup']);
    expect(newest.method).toBe('manual');

    const early = (await h.get(h.base)).body.items.find((d: any) => d.name === 'too-early');
    await running(early.id);
    expect(await rows(await externalUrl(early.id))).toEqual(['before-backup']);
  }, 180_000);

  it('forks from the newest backup: independent of the parent in both directions', async () => {
    const res = await h.post(`${one(src)}/fork`, { name: 'orders-fork' });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ status: 'creating', vpc_id: h.vpcId, source: { kind: 'fork', database_id: src, target_time: null } });
    await running(res.body.id);
    const fork = await externalUrl(res.body.id);
    // The newest backup was taken before A and B.
    expect(await rows(fork)).toEqual(['before-backup']);
    await insert(fork, 'fork-only');
    await insert(url, 'parent-later');
    expect(await rows(fork)).toEqual(['before-backup', 'fork-only']);
    expect(await rows(url)).toEqual(['A', 'B', 'before-backup', 'parent-later']);
    // Its own backups.
    expect((await backups(res.body.id)).items).toEqual([]);

    const elsewhere = await h.post(`${one(src)}/fork`, { name: 'x', target_vpc_id: '7d4c2a34-9a3a-4a57-9c1f-2f0d6f3f7a11' });
    expect(elsewhere.status).toBe(503); // no auth configured in this harness to check another VPC
    const badVpc = await h.post(`${one(src)}/fork`, { name: 'x', target_vpc_id: 'not-a-vpc' });
    expect(badVpc.status).toBe(404);
    expect(badVpc.body.code).toBe('vpc_not_found');
  }, 180_000);

  it('deletes backups: unknown 404, the newest is needed (409), an older one goes from the repository', async () => {
    expect((await h.request('DELETE', `${one(src)}/backups/19990101-000000`)).status).toBe(404);
    const [newest, oldest] = (await backups()).items;
    const needed = await h.request('DELETE', `${one(src)}/backups/${newest.name}`);
    expect(needed.status).toBe(409);
    expect(needed.body.code).toBe('backup_required');
    const res = await h.request('DELETE', `${one(src)}/backups/${oldest.name}`);
    expect(res.status).toBe(204);
    expect((await backups()).items.map((b: any) => b.name)).toEqual([newest.name]);
    const events = await adminQuery(
      h.db.adminUrl,
      `select kind from databases.outbox where payload->>'resource_id' = $1 and kind like 'database.backup%' order by id`,
      [src],
    );
    expect(events.map((e: any) => e.kind)).toEqual([
      'database.backup_schedule_updated',
      'database.backup_started',
      'database.backup_completed',
      'database.backup_started',
      'database.backup_completed',
      'database.backup_deleted',
    ]);
  }, 60_000);
});

describe('the backup schedule', () => {
  it('validates each field, naming it', async () => {
    for (const [body, field] of [
      [{ schedule: 'every day' }, 'schedule'],
      [{ schedule: '0 3 * * * *' }, 'schedule'],
      [{ retention_count: 0 }, 'retention_count'],
      [{ retention_count: 101 }, 'retention_count'],
      [{ enabled: 'yes' }, 'enabled'],
      [{ unknown: 1 }, undefined],
    ] as const) {
      const res = await h.request('PATCH', `${one(src)}/backups/schedule`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      if (field) expect(res.body.field).toBe(field);
    }
  });

  it('runs when due, and prunes the oldest scheduled backups beyond the retention count', async () => {
    const res = await h.request('PATCH', `${one(src)}/backups/schedule`, { schedule: '*/5 * * * *', retention_count: 1, enabled: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ schedule: '*/5 * * * *', retention_count: 1, enabled: true });
    expect(new Date(res.body.next_run_at).getUTCMinutes() % 5).toBe(0);
    const due = () =>
      adminQuery(h.db.adminUrl, `update databases.backup_schedules set next_run_at = now() - interval '1 second' where database_id = $1`, [src]);
    const scheduled = () => backups().then((l) => l.items.filter((b: any) => b.method === 'scheduled'));

    await due();
    const first = await until(scheduled, (l) => l.length === 1 && l[0].status === 'completed', 90_000);
    await due();
    const second = await until(scheduled, (l) => l.some((b: any) => b.name !== first[0].name && b.status === 'completed'), 90_000);
    // Retention 1: the older scheduled one is pruned; the manual one is the user's to keep.
    const left = await until(scheduled, (l) => l.length === 1, 30_000);
    expect(left[0].name).not.toBe(first[0].name);
    expect(second.length).toBeGreaterThanOrEqual(1);
    expect((await backups()).items.filter((b: any) => b.method === 'manual')).toHaveLength(1);

    const off = await h.request('PATCH', `${one(src)}/backups/schedule`, { enabled: false });
    expect(off.body).toMatchObject({ enabled: false, next_run_at: null, schedule: '*/5 * * * *' });
  }, 240_000);
});

describe('a deleted database', () => {
  it('keeps its backups for the retention: they can be listed and restored, then they are purged', async () => {
    const before = (await backups()).items.map((b: any) => b.name);
    expect((await h.request('DELETE', one(src))).status).toBe(202);
    await until(
      () => h.get(one(src)).then((r) => r.status),
      (s) => s === 404,
      60_000,
    );
    const kept = await backups();
    expect(kept.items.map((b: any) => b.name)).toEqual(before);
    // Sealed at deletion: the window reaches to then, not to now.
    expect(new Date(kept.recovery_window.latest).getTime()).toBeLessThan(Date.now());

    const res = await h.post(`${one(src)}/backups/restore`, { name: 'orders-undeleted' });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await running(res.body.id);
    expect(await rows(await externalUrl(res.body.id))).toContain('parent-later');

    // Past the retention (the deletion moved back in time), the scheduler purges them:
    // the database's place in the repository is gone, and so are its backup records.
    expect(await repositoryHolds(src)).toBe(true);
    await adminQuery(h.db.adminUrl, `update databases.databases set deleted_at = now() - interval '8 days' where id = $1`, [src]);
    await until(
      () => adminQuery(h.db.adminUrl, 'select backups_purged_at from databases.databases where id = $1', [src]),
      (r) => r[0].backups_purged_at !== null,
      60_000,
    );
    expect(await repositoryHolds(src)).toBe(false);
    expect(await adminQuery(h.db.adminUrl, 'select name from databases.backups where database_id = $1', [src])).toEqual([]);
    expect((await h.get(`${one(src)}/backups`)).status).toBe(404);
  }, 240_000);
});
