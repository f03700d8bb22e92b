// Pokes between instances of compute over PostgreSQL's LISTEN/NOTIFY (store/pokes.ts): what
// one instance sends reaches the others and not itself, and a listener whose connection the
// database dropped listens again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, createLogger, type Knex } from '@pier/kit';
import { adminQuery, createTestDatabase, infra, until, type TestDatabase } from '@pier/testing';
import { PgPokes, type Poke } from '../src/store/pokes.ts';

let db: TestDatabase;
let knex: Knex;
const log = createLogger('compute', 'silent');
const got = { a: [] as Poke[], b: [] as Poke[] };
let a: PgPokes;
let b: PgPokes;

beforeAll(async () => {
  db = await createTestDatabase(infra().postgresAdminUrl);
  knex = createDb(db.urls.compute, 'public');
  a = new PgPokes(knex, 'a', log, (p) => got.a.push(p), 100);
  b = new PgPokes(knex, 'b', log, (p) => got.b.push(p), 100);
  a.start();
  b.start();
  await until(
    async () =>
      (await adminQuery(db.adminUrl, `select count(*)::int as n from pg_stat_activity where query like 'LISTEN%' and datname = current_database()`))[0].n,
    (n) => n === 2,
    10_000,
    50,
  );
});

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await knex?.destroy();
  await db?.drop();
});

describe('pokes', () => {
  it('reach the other instances, not the sender', async () => {
    a.send({ kind: 'build.cancel', buildId: 'x' });
    await until(
      async () => got.b.length,
      (n) => n === 1,
      5_000,
      20,
    );
    expect(got.b[0]).toMatchObject({ kind: 'build.cancel', buildId: 'x' });
    await new Promise((r) => setTimeout(r, 100));
    expect(got.a).toEqual([]);
  });

  it('are received again once a lost listening connection is made again', async () => {
    await adminQuery(db.adminUrl, `select pg_terminate_backend(pid) from pg_stat_activity where query like 'LISTEN%' and datname = current_database()`);
    got.b.length = 0;
    // Sent until one arrives: those sent while it was away are lost (the periodic passes cover them).
    await until(
      async () => {
        a.send({ kind: 'edge' });
        return got.b.length;
      },
      (n) => n > 0,
      10_000,
      100,
    );
    expect(got.b[0]).toMatchObject({ kind: 'edge' });
  });
});
