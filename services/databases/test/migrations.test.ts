import { afterAll, beforeAll, expect, it } from 'vitest';
import { createDb, migrate, type Knex } from '@pier/kit';
import { createTestDatabase } from '@pier/testing';
import { migrations, SCHEMA } from '../src/store/migrations.ts';
import { infra } from './support.ts';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let knex: Knex;
beforeAll(async () => {
  db = await createTestDatabase(infra().postgresAdminUrl);
  knex = createDb(db.urls.databases, SCHEMA);
});
afterAll(async () => {
  await knex.destroy();
  await db.drop();
});

const tables = async () =>
  (
    await knex.raw(
      `select table_name from information_schema.tables where table_schema = ? and table_name <> 'migrations' and table_name <> 'migrations_lock' order by 1`,
      [SCHEMA],
    )
  ).rows.map((r: { table_name: string }) => r.table_name);

it('migrates up, down and up again', async () => {
  await migrate(knex, SCHEMA, migrations, 'up');
  expect(await tables()).toEqual(['allowlist_rules', 'backup_schedules', 'backups', 'databases', 'idempotency_keys', 'installation', 'leases', 'outbox']);
  // One installation id, drawn at random, and no second row.
  const [{ id }] = await knex('installation').select('id');
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  await expect(knex('installation').insert({ singleton: false, id })).rejects.toThrow(/installation_one_row/);
  // A backup's status, method and a schedule's retention are checked by the schema too.
  const [database] = await knex('databases')
    .insert({
      id: id,
      short_id: id.slice(0, 8),
      workspace_id: 'w',
      vpc_id: 'v',
      name: 'n',
      engine: 'postgresql',
      instance_type: 'svc.nano',
      storage_gb: 1,
      version: '15',
      replicas: 0,
      external_access_enabled: false,
      status: 'running',
    })
    .returning('id');
  await expect(knex('backups').insert({ database_id: database.id, name: 'b', method: 'hourly', status: 'running' })).rejects.toThrow(/backups_method/);
  await expect(knex('backups').insert({ database_id: database.id, name: 'b', method: 'manual', status: 'done' })).rejects.toThrow(/backups_status/);
  await expect(knex('backup_schedules').insert({ database_id: database.id, schedule: '0 3 * * *', retention_count: 0, enabled: true })).rejects.toThrow(
    /backup_schedules_retention/,
  );
  await migrate(knex, SCHEMA, migrations, 'down');
  expect(await tables()).toEqual([]);
  await migrate(knex, SCHEMA, migrations, 'up');
  expect(await tables()).toEqual(['allowlist_rules', 'backup_schedules', 'backups', 'databases', 'idempotency_keys', 'installation', 'leases', 'outbox']);
});
