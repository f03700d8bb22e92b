import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, migrate, type Knex } from '@pier/kit';
import { createTestDatabase } from '@pier/testing';
import { migrations, SCHEMA } from '../src/store/migrations.ts';
import { infra } from './support.ts';

describe('secrets migrations', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let knex: Knex;
  beforeAll(async () => {
    db = await createTestDatabase(infra().postgresAdminUrl);
    knex = createDb(db.urls.secrets, SCHEMA);
  });
  afterAll(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  const tables = async () =>
    (await knex.raw(`select table_name from information_schema.tables where table_schema = ? order by 1`, [SCHEMA])).rows.map(
      (r: { table_name: string }) => r.table_name,
    );

  it('migrates up, down and up again', async () => {
    await migrate(knex, SCHEMA, migrations, 'up');
    expect(await tables()).toEqual(['idempotency_keys', 'installation', 'leases', 'migrations', 'migrations_lock', 'outbox', 'secrets']);
    const columns = (await knex.raw(`select column_name from information_schema.columns where table_schema = ? and table_name = 'secrets'`, [SCHEMA])).rows.map(
      (r: { column_name: string }) => r.column_name,
    );
    // No column could hold a value.
    expect(columns.sort()).toEqual(['created_at', 'id', 'keys', 'name', 'state', 'updated_at', 'vpc_id', 'workspace_id']);
    await migrate(knex, SCHEMA, migrations, 'down');
    expect(await tables()).toEqual(['migrations', 'migrations_lock']);
    await migrate(knex, SCHEMA, migrations, 'up');
    expect(await tables()).toContain('secrets');
  });
});
