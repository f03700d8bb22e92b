// MySQL (MariaDB) backups on the docker adapter, for real: mariadb-backup streamed into the
// run's repository volume, restores of named backups into new databases, forks, checked
// with the real mysql client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mysqlCli } from '@pier/testing';
import { databaseChecks, startDatabases, type Databases } from './support.ts';

let h: Databases;
let src: string;
let url: string;

let one: (id: string) => string;
let running: (id: string) => Promise<void>;
let externalUrl: (id: string) => Promise<string>;
let backups: () => Promise<any>;
let completed: (name: string) => Promise<any>;

const sql = async (u: string, statement: string) => {
  const r = await mysqlCli(u, statement);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.trim().split('\n').filter(Boolean);
};

beforeAll(async () => {
  h = await startDatabases();
  const c = databaseChecks(h);
  ({ one, running, externalUrl } = c);
  backups = () => c.backups(src);
  completed = (name) => c.completed(src, name);
  const res = await h.post(h.base, { name: 'shop', engine: 'mysql' });
  expect(res.status).toBe(202);
  src = res.body.id;
  await running(src);
  url = await externalUrl(src);
  await sql(url, "create table t (v varchar(40) primary key); insert into t values ('first')");
  // A view and a trigger travel with the data into a copy (moved under the copy's names).
  await sql(url, "create table log (v varchar(40)); create view firsts as select v from t where v like 'f%'");
  await sql(url, 'create trigger logged after insert on t for each row insert into log values (new.v)');
  // No scheduled run while the tests count backups.
  expect((await h.request('PATCH', `${one(src)}/backups/schedule`, { enabled: false })).status).toBe(200);
}, 180_000);

afterAll(async () => {
  await h?.stop();
});

describe('backups of a mysql database', () => {
  it('refuses a restore without backup_name or with a target_time, naming the field', async () => {
    const noName = await h.post(`${one(src)}/backups/restore`, { name: 'copy' });
    expect(noName.status).toBe(400);
    expect(noName.body).toMatchObject({ code: 'invalid_request', field: 'backup_name' });
    const pitr = await h.post(`${one(src)}/backups/restore`, { name: 'copy', backup_name: 'x', target_time: new Date().toISOString() });
    expect(pitr.status).toBe(400);
    expect(pitr.body).toMatchObject({ field: 'target_time' });
    expect(await backups()).toEqual({ items: [], next_cursor: null, recovery_window: null });
  });

  it('a fork with no completed backup triggers one (409 backup_pending), then forks', async () => {
    const res = await h.post(`${one(src)}/fork`, { name: 'shop-fork' });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('backup_pending');
    const [triggered] = (await backups()).items;
    expect(triggered).toMatchObject({ method: 'triggered', status: 'running' });
    const done = await completed(triggered.name);
    expect(done.size_bytes).toBeGreaterThan(0);
    expect((await backups()).recovery_window).toBeNull();

    const fork = await h.post(`${one(src)}/fork`, { name: 'shop-fork' });
    expect(fork.status, JSON.stringify(fork.body)).toBe(202);
    expect(fork.body).toMatchObject({ engine: 'mysql', instance_type: 'svc.small', replicas: 1, source: { kind: 'fork', backup_name: triggered.name } });
    await running(fork.body.id);
    const forkUrl = await externalUrl(fork.body.id);
    expect(new URL(forkUrl).pathname).toBe(`/${fork.body.short_id}`);
    expect(await sql(forkUrl, 'select v from t order by v')).toEqual(['first']);
    await sql(forkUrl, "insert into t values ('fork-only')");
    await sql(url, "insert into t values ('parent-later')");
    expect(await sql(forkUrl, 'select v from t order by v')).toEqual(['first', 'fork-only']);
    expect(await sql(url, 'select v from t order by v')).toEqual(['first', 'parent-later']);
  }, 180_000);

  it('restores a named backup into a new database with its own credentials', async () => {
    const taken = await h.post(`${one(src)}/backups`, {});
    expect(taken.status).toBe(202);
    expect(taken.body).toMatchObject({ method: 'manual', status: 'running' });
    await completed(taken.body.name);
    await sql(url, "insert into t values ('after-backup')");

    const res = await h.post(`${one(src)}/backups/restore`, { name: 'shop-copy', backup_name: taken.body.name });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await running(res.body.id);
    const copy = await externalUrl(res.body.id);
    expect(new URL(copy).username).toBe(`app_${res.body.short_id}`);
    expect(await sql(copy, 'select v from t order by v')).toEqual(['first', 'parent-later']);
    expect(await sql(copy, 'select v from firsts')).toEqual(['first']);
    await sql(copy, "insert into t values ('in-copy')");
    expect(await sql(copy, "select v from log where v = 'in-copy'")).toEqual(['in-copy']);
    // The source's account does not reach the copy.
    const theirs = new URL(copy);
    theirs.username = new URL(url).username;
    theirs.password = new URL(url).password;
    expect((await mysqlCli(theirs.toString(), 'select 1')).code).not.toBe(0);
  }, 180_000);

  it('deletes any finished backup', async () => {
    const names = (await backups()).items.map((b: any) => b.name);
    expect(names).toHaveLength(2);
    for (const name of names) expect((await h.request('DELETE', `${one(src)}/backups/${name}`)).status).toBe(204);
    expect((await backups()).items).toEqual([]);
  }, 60_000);
});
