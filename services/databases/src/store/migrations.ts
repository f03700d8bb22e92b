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
];
