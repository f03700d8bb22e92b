// Two databases processes on one set of records, as two pods of the chart run: changes of
// one database serialized across them (a lease per database in PostgreSQL, kit's
// leases.ts), the reconciler and backup scheduler run by one of them, and taken over by the
// other when that one is killed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateIdentityKeys } from '@pier/kit';
import { createTestDatabase, infra, isAlive, type ServiceProcess } from '@pier/testing';
import { pgHba, spawnDatabases, until, type DatabasesProcess, type TestDatabase } from './support.ts';

let db: TestDatabase;
let p: DatabasesProcess;
let a: ServiceProcess;
let b: ServiceProcess;

beforeAll(async () => {
  db = await createTestDatabase(infra().postgresAdminUrl);
  p = await spawnDatabases(await generateIdentityKeys(), db);
  a = await p.spawn();
  b = await p.spawn();
}, 60_000);

afterAll(async () => {
  await a?.stop();
  await p?.stop();
  await db?.drop();
}, 60_000);

/** Calls through one process or the other. */
const via = (proc: ServiceProcess, method: string, path: string, body?: unknown) => {
  p.proc = proc;
  return p.call(method, path, body);
};
const leader = async (loop: string) =>
  ((await p.sql(`select holder from databases.leases where name = $1 and expires_at > now()`, [`leader:${loop}`]))[0]?.holder as string | undefined) ?? '';
const pidOf = (holder: string) => Number(/:(\d+):[0-9a-f]+$/.exec(holder)?.[1]);

describe('two instances of databases', () => {
  it('one leads each loop; changes of one database from both never interleave in the engine', async () => {
    await until(
      () => leader('reconciler'),
      (h) => h !== '',
      10_000,
    );
    expect(isAlive(pidOf(await leader('reconciler')))).toBe(true);
    expect(isAlive(pidOf(await leader('backup-scheduler')))).toBe(true);

    const created = await via(a, 'POST', p.base, { name: 'shared' });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const id = created.body.id;
    await until(
      () => via(b, 'GET', `${p.base}/${id}`).then((r) => r.body.status),
      (s) => s === 'running' || s === 'error',
      60_000,
    );
    // The rules reach pg_hba.conf with external access on.
    expect((await via(b, 'PATCH', `${p.base}/${id}`, { external_access_enabled: true })).status).toBe(200);
    // Ten rules through each process at once: each change is applied whole, one at a time,
    // so the server ends with all twenty (a change applied with a stale list would drop some).
    const cidrs = Array.from({ length: 20 }, (_, i) => `198.51.100.${i + 1}/32`);
    const added = await Promise.all(cidrs.map((cidr, i) => via(i % 2 ? b : a, 'POST', `${p.base}/${id}/ip-allowlist`, { cidr })));
    expect(added.map((r) => r.status)).toEqual(cidrs.map(() => 201));
    const hba = await pgHba(id);
    for (const cidr of cidrs) expect(hba).toContain(cidr);
  }, 120_000);

  it('the leader killed, the other takes its loops over and settles what it left', async () => {
    const holder = await leader('reconciler');
    // The service's own process (tsx runs it as a child of the one spawned), killed outright.
    process.kill(pidOf(holder), 'SIGKILL');
    const t0 = Date.now();
    const died = await Promise.race([a.exited.then(() => a), b.exited.then(() => b)]);
    const surviving = died === a ? b : a;
    await until(
      () => leader('reconciler'),
      (h) => h !== '' && h !== holder && isAlive(pidOf(h)),
      30_000,
    );
    console.log(`two instances: the reconciler's leadership moved in ${Date.now() - t0} ms after its leader was killed`);
    // The survivor's reconciler tears a deleted database down.
    const list = (await via(surviving, 'GET', p.base)).body.items as { id: string }[];
    for (const d of list) expect((await via(surviving, 'DELETE', `${p.base}/${d.id}`)).status).toBe(202);
    await until(
      () => via(surviving, 'GET', p.base).then((r) => (r.body.items as unknown[]).length),
      (n) => n === 0,
      60_000,
    );
    a = surviving;
  }, 120_000);
});
