// Keyed writes (idempotency.ts) that fail with a 5xx: a retry runs them again, and when the
// failed attempt had already made its resource, the retry is told which (the route's
// `replay`) rather than making a second one or tripping over the first (a 409 on its name,
// seen in a rolling upgrade: a create answered 503 after its row was written).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, infra, type TestDatabase } from '@pier/testing';
import { createDb, createIdempotencyTable, createLogger, IdempotencyKeys, insertForKey, migrate, type Knex } from '../src/index.ts';

let t: TestDatabase;
let db: Knex;
let keys: IdempotencyKeys;

beforeAll(async () => {
  t = await createTestDatabase(infra().postgresAdminUrl);
  db = createDb(t.urls.compute, 'compute');
  await migrate(db, 'compute', [
    { name: '0001_idempotency', up: createIdempotencyTable, down: (d) => d.schema.dropTable('idempotency_keys') },
    { name: '0002_things', up: (d) => d.schema.createTable('things', (x) => x.uuid('id').primary()), down: (d) => d.schema.dropTable('things') },
  ]);
  keys = new IdempotencyKeys(db, t.urls.compute, 'compute', createLogger('t', 'silent'));
});

afterAll(async () => {
  await keys.stop();
  await db.destroy();
  await t.drop();
});

const unavailable = { status: 503, body: { error: 'unavailable', code: 'unavailable' }, keep: true };

describe('a keyed write answered with a 5xx', () => {
  it('that had made its resource: the retry is given it to answer with', async () => {
    const key = randomUUID();
    const id = randomUUID();
    const first = await keys.run('workspace:w', key, 'fp', async () => {
      await insertForKey(db, async (q) => (await q('things').insert({ id }).returning('id'))[0] as { id: string });
      return unavailable;
    });
    expect(first).toMatchObject({ answer: { status: 503 }, replayed: false });

    let made: string | undefined;
    const retry = await keys.run('workspace:w', key, 'fp', async (m) => {
      made = m;
      return { status: 201, body: { id: m }, keep: true };
    });
    expect(made).toBe(id);
    expect(retry).toMatchObject({ answer: { status: 201, body: { id } }, replayed: false });
    // Answered now: a third attempt is a replay.
    const third = await keys.run('workspace:w', key, 'fp', async () => unavailable);
    expect(third).toMatchObject({ answer: { status: 201, body: { id } }, replayed: true });
  });

  it('that had made nothing: the key is free, and the retry runs afresh', async () => {
    const key = randomUUID();
    await keys.run('workspace:w', key, 'fp', async () => unavailable);
    expect(await db('idempotency_keys').where({ key }).first()).toBeUndefined();
    let made: string | undefined = 'unset';
    const retry = await keys.run('workspace:w', key, 'fp', async (m) => {
      made = m;
      return { status: 201, body: {}, keep: true };
    });
    expect(made).toBeUndefined();
    expect(retry.replayed).toBe(false);
  });
});
