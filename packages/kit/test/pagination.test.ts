// Lists page by (created_at, id). These run against the real PostgreSQL, where created_at
// has microseconds that a JS Date cannot hold.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, infra, type TestDatabase } from '@pier/testing';
import { createDb, decodeCursor, encodeCursor, keysetPage, pageQuery, PierError, type Knex } from '../src/index.ts';

let t: TestDatabase;
let db: Knex;

beforeAll(async () => {
  t = await createTestDatabase(infra().postgresAdminUrl);
  db = createDb(t.urls.compute, 'compute');
  await db.schema.createTable('items', (tb) => {
    tb.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    tb.text('name').notNullable();
    tb.timestamp('created_at', { useTz: true }).notNullable();
  });
  // Rows sharing one millisecond but not one microsecond, and rows sharing one instant:
  // the cases a millisecond cursor or a created_at-only cursor gets wrong.
  await db.raw(`insert into items (name, created_at)
    select 'item-' || g, timestamptz '2026-01-01 00:00:00.123000+00' + (g / 3) * interval '1 microsecond'
    from generate_series(0, 29) g`);
});

afterAll(async () => {
  await db.destroy();
  await t.drop();
});

async function walk(limit: number, order: 'asc' | 'desc'): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await keysetPage<{ id: string; name: string }>(db('items').select('id', 'name'), { limit, cursor }, { order });
    expect(page.items.length).toBeLessThanOrEqual(limit);
    for (const row of page.items) expect(Object.keys(row).sort()).toEqual(['id', 'name']);
    seen.push(...page.items.map((r) => r.id));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return seen;
}

describe('keysetPage', () => {
  it('walks every row exactly once, in order, across microsecond and identical timestamps', async () => {
    const all = (
      await db('items')
        .orderBy([{ column: 'created_at' }, { column: 'id' }])
        .select('id')
    ).map((r: { id: string }) => r.id);
    for (const limit of [1, 2, 7, 30, 200]) {
      expect(await walk(limit, 'asc')).toEqual(all);
      expect(await walk(limit, 'desc')).toEqual([...all].reverse());
    }
  });

  it('selects every column when the query selects none', async () => {
    const page = await keysetPage<Record<string, unknown>>(db('items'), { limit: 1 });
    expect(Object.keys(page.items[0]!).sort()).toEqual(['created_at', 'id', 'name']);
    expect(page.nextCursor).toEqual(expect.any(String));
  });
});

describe('cursors', () => {
  const invalid = (cursor: string) => {
    try {
      decodeCursor(cursor);
    } catch (err) {
      return err instanceof PierError ? { kind: err.kind, code: err.code } : err;
    }
    return 'accepted';
  };

  it('refuses what this API did not hand out with 400 invalid_cursor, before any query', () => {
    const forged = [
      '',
      'garbage',
      Buffer.from(JSON.stringify(['2024-01-01T00:00:00Z', 'not-a-uuid'])).toString('base64url'),
      Buffer.from('123|not-a-uuid').toString('base64url'),
      Buffer.from('-5|00000000-0000-0000-0000-000000000000').toString('base64url'),
      Buffer.from('12345678901234567|00000000-0000-0000-0000-000000000000').toString('base64url'),
      Buffer.from('1|00000000-0000-0000-0000-000000000000|x').toString('base64url'),
    ];
    for (const cursor of forged) expect(invalid(cursor)).toEqual({ kind: 'invalid', code: 'invalid_cursor' });
  });

  it('round-trips a position to the microsecond', () => {
    const p = { at: 1_767_225_600_123_456, id: '0c8e1f2a-5b6c-4d7e-8f90-a1b2c3d4e5f6' };
    expect(decodeCursor(encodeCursor(p))).toEqual(p);
  });

  it('documents and checks limit', () => {
    expect(pageQuery.parse({})).toEqual({ limit: 50 });
    for (const limit of ['0', '201', 'abc', '1.5']) expect(pageQuery.safeParse({ limit }).success).toBe(false);
  });
});
