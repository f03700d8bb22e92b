import { createOutboxTable, type Migration } from '@pier/kit';

export const SCHEMA = 'databases';

export const migrations: Migration[] = [
  {
    name: '0001_outbox',
    up: (db) => createOutboxTable(db),
    down: (db) => db.schema.dropTable('outbox'),
  },
  {
    name: '0002_databases',
    async up(db) {
      await db.schema.createTable('databases', (t) => {
        t.uuid('id').primary();
        t.text('short_id').notNullable();
        t.text('workspace_id').notNullable();
        t.text('vpc_id').notNullable();
        t.text('name').notNullable();
        t.text('engine').notNullable();
        t.text('instance_type').notNullable();
        t.integer('storage_gb').notNullable();
        t.text('version').notNullable();
        t.integer('replicas').notNullable();
        t.boolean('external_access_enabled').notNullable();
        t.text('status').notNullable();
        t.text('status_reason');
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.timestamp('deleted_at', { useTz: true });
        t.index(['vpc_id', 'created_at', 'id']);
      });
      // Names are unique among a VPC's live databases; short ids among all live ones,
      // since they name external hosts (`<short_id>.<domain>`).
      await db.raw('create unique index databases_vpc_name_live on databases (vpc_id, name) where deleted_at is null');
      await db.raw('create unique index databases_short_id_live on databases (short_id) where deleted_at is null');
      await db.schema.createTable('allowlist_rules', (t) => {
        t.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
        t.uuid('database_id').notNullable().references('id').inTable('databases').onDelete('CASCADE');
        t.text('cidr').notNullable();
        t.text('description').notNullable().defaultTo('');
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.unique(['database_id', 'cidr']);
      });
    },
    async down(db) {
      await db.schema.dropTable('allowlist_rules');
      await db.schema.dropTable('databases');
    },
  },
  {
    name: '0003_pending_first',
    async up(db) {
      // Rows that exist already were provisioned: only new ones start invisible.
      await db.schema.alterTable('databases', (t) => {
        t.boolean('provisioned').notNullable().defaultTo(true);
        t.jsonb('pending_change');
        t.timestamp('pending_since', { useTz: true });
      });
      await db.raw('alter table databases alter column provisioned set default false');
      await db.raw('create index databases_unprovisioned on databases (created_at) where not provisioned');
      await db.raw('create index databases_pending_change on databases (pending_since) where pending_change is not null');
      await db.schema.alterTable('allowlist_rules', (t) => {
        t.text('state').notNullable().defaultTo('active');
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
      });
      await db.raw("alter table allowlist_rules add constraint allowlist_rules_state check (state in ('adding', 'active', 'removing'))");
      await db.raw("create index allowlist_rules_pending on allowlist_rules (updated_at) where state <> 'active'");
      // One row: this installation's id, labelled on everything the adapters create, so
      // the sweep of orphaned cluster objects never touches another installation's
      // (tests run many against one Docker engine).
      await db.schema.createTable('installation', (t) => {
        t.boolean('singleton').primary().defaultTo(true);
        t.uuid('id').notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
      });
      await db.raw('alter table installation add constraint installation_one_row check (singleton)');
      await db.raw('insert into installation (id) values (gen_random_uuid())');
    },
    async down(db) {
      // Dropping a column drops its indexes and check constraints with it.
      await db.schema.dropTable('installation');
      await db.schema.alterTable('allowlist_rules', (t) => {
        t.dropColumn('state');
        t.dropColumn('updated_at');
      });
      await db.schema.alterTable('databases', (t) => {
        t.dropColumn('provisioned');
        t.dropColumn('pending_change');
        t.dropColumn('pending_since');
      });
    },
  },
];
