import { afterAll, describe, expect, it } from 'vitest';
import { createDb, migrate } from '@pier/kit';
import { createTestDatabase, infra } from '@pier/testing';
import { migrations, SCHEMA } from '../src/store/migrations.ts';

describe('auth migrations', () => {
  const drops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const d of drops) await d();
  });

  it('go up, down and up again, as the service role', async () => {
    const database = await createTestDatabase(infra().postgresAdminUrl);
    drops.push(database.drop);
    const db = createDb(database.urls.auth, SCHEMA);
    const tables = async () =>
      (await db.raw<{ rows: { t: string }[] }>(`select table_name as t from information_schema.tables where table_schema = 'auth' order by 1`)).rows.map(
        (r) => r.t,
      );
    const expected = ['api_keys', 'auth_epoch', 'bootstrap', 'cli_sessions', 'idempotency_keys', 'memberships', 'outbox', 'users', 'vpcs', 'workspaces'];
    try {
      await migrate(db, SCHEMA, migrations, 'up');
      expect((await tables()).filter((t) => !t.startsWith('migrations'))).toEqual(expected);
      await migrate(db, SCHEMA, migrations, 'down');
      expect((await tables()).filter((t) => !t.startsWith('migrations'))).toEqual([]);
      await migrate(db, SCHEMA, migrations, 'up');
      expect((await tables()).filter((t) => !t.startsWith('migrations'))).toEqual(expected);
      // Running again is a no-op.
      await migrate(db, SCHEMA, migrations, 'up');
    } finally {
      await db.destroy();
    }
  });
});
