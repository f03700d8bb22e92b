import type { Knex } from 'knex';

// An installation's id: one row in a service's own schema, made by its migration, and
// labelled on what its cluster adapters create. Several Pier installations may share one
// cluster (a staging and a production Pier, or the test suites on one engine), and a
// sweep of objects no record accounts for must never reach another installation's.

/** The migration step: the table and its one row. */
export async function createInstallationTable(db: Knex): Promise<void> {
  await db.schema.createTable('installation', (t) => {
    t.boolean('singleton').primary().defaultTo(true);
    t.uuid('id').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
  });
  await db.raw('alter table installation add constraint installation_one_row check (singleton)');
  await db.raw('insert into installation (id) values (gen_random_uuid())');
}

/** This installation's id, as the migration made it. */
export async function readInstallationId(db: Knex): Promise<string> {
  const row = (await db('installation').first('id')) as { id: string } | undefined;
  if (!row) throw new Error('the installation row is missing: the migration that makes it did not run');
  return row.id;
}
