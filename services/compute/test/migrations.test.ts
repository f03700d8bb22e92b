import { describe, it, expect, afterAll } from 'vitest';
import { createDb, migrate } from '@pier/kit';
import { createTestDatabase, infra } from '@pier/testing';
import { migrations, SCHEMA } from '../src/store/migrations.ts';
import { type TestDatabase } from './support.ts';

let db: TestDatabase | undefined;
afterAll(async () => db?.drop());

describe('compute migrations', () => {
  it("migrate up, down and up again in compute's own schema, as compute's own role", async () => {
    db = await createTestDatabase(infra().postgresAdminUrl);
    const knex = createDb(db.urls.compute, SCHEMA);
    try {
      const tables = async () =>
        (await knex.raw(`select table_name from information_schema.tables where table_schema = ? order by 1`, [SCHEMA])).rows.map(
          (r: { table_name: string }) => r.table_name,
        );
      await migrate(knex, SCHEMA, migrations, 'up');
      expect(await tables()).toEqual(expect.arrayContaining(['build_logs', 'builds', 'deployments', 'env_vars', 'idempotency_keys', 'outbox', 'services']));
      expect(await tables()).toEqual(expect.arrayContaining(['uptime_counts', 'uptime_incidents', 'uptime_monitors']));
      expect(await tables()).toEqual(expect.arrayContaining(['disk_backup_schedules', 'disk_backups', 'disk_restores']));
      // A literal and a reference at once is refused by the database too.
      await knex('services').insert({
        workspace_id: '6f1c1a52-7d2e-4a8e-9d55-1f6f3d7d8a10',
        vpc_id: '6f1c1a52-7d2e-4a8e-9d55-1f6f3d7d8a11',
        name: 'a',
        service_type: 'web',
        instance_type: 'svc.nano',
        deployment_mode: 'always_on',
        min_replicas: 1,
        run_as_user: 1000,
        status: 'creating',
      });
      const [svc] = await knex('services').select('id');
      await expect(
        knex('env_vars').insert({ service_id: svc.id, key: 'K', position: 0, value: 'v', secret_id: '6f1c1a52-7d2e-4a8e-9d55-1f6f3d7d8a12', secret_key: 'x' }),
      ).rejects.toThrow(/env_vars_literal_or_reference/);
      await migrate(knex, SCHEMA, migrations, 'down');
      expect(await tables()).not.toContain('services');
      expect(await tables()).not.toContain('builds');
      expect(await tables()).not.toContain('uptime_monitors');
      expect(await tables()).not.toContain('disk_backups');
      await migrate(knex, SCHEMA, migrations, 'up');
      expect(await tables()).toContain('services');
    } finally {
      await knex.destroy();
    }
  });
});
