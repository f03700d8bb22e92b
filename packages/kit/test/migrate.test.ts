import { describe, it, expect, inject } from 'vitest';
import { createDb, migrate, type Migration } from '../src/index.ts';
import { createTestDatabase } from '@pier/testing';

const migrations: Migration[] = [
  {
    name: '0001_things',
    up: (db) => db.schema.createTable('things', (t) => t.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'))),
    down: (db) => db.schema.dropTable('things'),
  },
];

describe('per-schema migrations and roles', () => {
  it('migrates a service schema up, down and up again, in that schema only', async () => {
    const t = await createTestDatabase(inject('postgresAdminUrl'));
    const db = createDb(t.urls.secrets, 'secrets');
    try {
      await migrate(db, 'secrets', migrations);
      expect(await db.schema.withSchema('secrets').hasTable('things')).toBe(true);
      expect(await db.schema.withSchema('secrets').hasTable('migrations')).toBe(true);
      await migrate(db, 'secrets', migrations, 'down');
      expect(await db.schema.withSchema('secrets').hasTable('things')).toBe(false);
      await migrate(db, 'secrets', migrations);
      expect(await db.schema.withSchema('secrets').hasTable('things')).toBe(true);
    } finally {
      await db.destroy();
    }
    // One service's role cannot read another service's schema.
    const other = createDb(t.urls.auth, 'auth');
    try {
      await expect(other.raw('select * from secrets.things')).rejects.toThrow(/permission denied/);
    } finally {
      await other.destroy();
      await t.drop();
    }
  });
});
