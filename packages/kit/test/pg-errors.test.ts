// What each PostgreSQL failure becomes, produced by the real server rather than described.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, freePort, infra, type TestDatabase } from '@pier/testing';
import { createDb, pgErrorOf, translatePgError, type PierError, type Knex } from '../src/index.ts';

let t: TestDatabase;
let db: Knex;

beforeAll(async () => {
  t = await createTestDatabase(infra().postgresAdminUrl);
  db = createDb(t.urls.compute, 'compute');
  await db.schema.createTable('parents', (tb) => {
    tb.uuid('id').primary();
    tb.text('name').notNullable().unique();
    tb.integer('size').notNullable().checkPositive();
  });
  await db.schema.createTable('children', (tb) => {
    tb.uuid('id').primary();
    tb.uuid('parent_id').notNullable().references('id').inTable('parents');
  });
  await db('parents').insert({ id: '00000000-0000-0000-0000-000000000001', name: 'taken', size: 1 });
});

afterAll(async () => {
  await db.destroy();
  await t.drop();
});

async function failure(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure');
}

const shape = (err: PierError | undefined) => err && { kind: err.kind, code: err.code, message: err.message };

describe('pgErrorOf', () => {
  it("maps a unique violation to 409 already_exists, with the store's message", async () => {
    const err = await failure(() => db('parents').insert({ id: '00000000-0000-0000-0000-000000000002', name: 'taken', size: 1 }));
    expect(shape(pgErrorOf(err, { unique: 'a parent named "taken" exists' }))).toEqual({
      kind: 'conflict',
      code: 'already_exists',
      message: 'a parent named "taken" exists',
    });
    expect(() => translatePgError(err, { unique: 'dup' })).toThrow('dup');
  });

  it('maps a unique violation by the constraint that refused it, with its message, code and field', async () => {
    const constraints = {
      parents_name_unique: { message: 'a parent named "taken" exists', code: 'name_taken', field: 'name' },
      parents_other: { message: 'not this one', code: 'other' },
    };
    const err = await failure(() => db('parents').insert({ id: '00000000-0000-0000-0000-000000000002', name: 'taken', size: 1 }));
    const mapped = pgErrorOf(err, { unique: 'fallback', constraints });
    expect(shape(mapped)).toEqual({ kind: 'conflict', code: 'name_taken', message: 'a parent named "taken" exists' });
    expect(mapped?.details).toEqual({ field: 'name' });
    // Another index of the table refusing the row: the store's general message.
    const other = await failure(() => db('parents').insert({ id: '00000000-0000-0000-0000-000000000001', name: 'fresh', size: 1 }));
    expect(shape(pgErrorOf(other, { unique: 'fallback', constraints }))).toEqual({ kind: 'conflict', code: 'already_exists', message: 'fallback' });
  });

  it('maps a foreign-key violation to 409 reference_conflict', async () => {
    const err = await failure(() => db('children').insert({ id: '00000000-0000-0000-0000-000000000003', parent_id: '00000000-0000-0000-0000-000000000009' }));
    expect(pgErrorOf(err)).toMatchObject({ kind: 'conflict', code: 'reference_conflict' });
  });

  it('maps check, not-null and malformed values to 400 invalid_request', async () => {
    const check = await failure(() => db('parents').insert({ id: '00000000-0000-0000-0000-000000000004', name: 'neg', size: -1 }));
    const notNull = await failure(() => db('parents').insert({ id: '00000000-0000-0000-0000-000000000005', name: null, size: 1 }));
    const malformed = await failure(() => db('parents').where({ id: 'not-a-uuid' }).first());
    for (const err of [check, notNull, malformed]) expect(pgErrorOf(err)).toMatchObject({ kind: 'invalid', code: 'invalid_request' });
    expect(pgErrorOf(notNull)).toMatchObject({ details: { field: 'name' } });
  });

  it('maps a serialization failure to 409 concurrent_update', async () => {
    const err = await failure(() => db.raw("do $$ begin raise exception 'could not serialize access' using errcode = '40001'; end $$"));
    expect(pgErrorOf(err)).toMatchObject({ kind: 'conflict', code: 'concurrent_update' });
  });

  it('maps an unreachable database to 503 unavailable', async () => {
    const url = new URL(t.urls.compute);
    url.port = String(await freePort());
    const away = createDb(url.toString(), 'compute');
    try {
      const err = await failure(() => away.raw('select 1'));
      expect(pgErrorOf(err)).toMatchObject({ kind: 'unavailable', code: 'unavailable' });
    } finally {
      await away.destroy();
    }
  });

  it('gives up on a database that accepts but never answers after the connect timeout: 503 unavailable', async () => {
    // A black hole: the TCP connection is accepted, the start-up message never answered.
    const sockets = new Set<net.Socket>();
    const hole = net.createServer((s) => sockets.add(s));
    await new Promise<void>((r) => hole.listen(0, '127.0.0.1', () => r()));
    const url = new URL(t.urls.compute);
    url.port = String((hole.address() as net.AddressInfo).port);
    const away = createDb(url.toString(), 'compute', 10, { connectMs: 300 });
    try {
      const started = performance.now();
      const err = await failure(() => away.raw('select 1'));
      const ms = performance.now() - started;
      expect(pgErrorOf(err)).toMatchObject({ kind: 'unavailable', code: 'unavailable' });
      expect(ms).toBeGreaterThanOrEqual(250);
      expect(ms).toBeLessThan(2000);
    } finally {
      await away.destroy();
      for (const s of sockets) s.destroy();
      await new Promise((r) => hole.close(r));
    }
  });

  it('leaves other errors alone', () => {
    expect(pgErrorOf(new Error('boom'))).toBeUndefined();
    expect(() => translatePgError(new TypeError('x'))).toThrow(TypeError);
  });
});
