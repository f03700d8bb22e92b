import { createIdempotencyTable, createInstallationTable, createLeasesTable, createOutboxTable, nextFireTime, type Migration } from '@pier/kit';
import { BACKUP_METHODS, BACKUP_STATUSES, defaultSchedule, RETENTION_COUNT } from '../domain/backup-records.ts';

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
      await createInstallationTable(db);
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
  {
    name: '0004_backups',
    async up(db) {
      const list = (values: readonly string[]) => values.map((v) => `'${v}'`).join(', ');
      await db.schema.createTable('backups', (t) => {
        t.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
        t.uuid('database_id').notNullable().references('id').inTable('databases').onDelete('CASCADE');
        t.text('name').notNullable();
        t.text('method').notNullable();
        t.text('status').notNullable();
        t.bigint('size_bytes');
        t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.timestamp('completed_at', { useTz: true });
        t.text('error');
        // The repository's own id of the backup (pgBackRest's label).
        t.text('ref');
        // Pending first: false until the request that starts it commits.
        t.boolean('started').notNullable().defaultTo(false);
        t.timestamp('deleting_since', { useTz: true });
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.unique(['database_id', 'name']);
        t.index(['database_id', 'started_at', 'id']);
      });
      await db.raw(`alter table backups add constraint backups_status check (status in (${list(BACKUP_STATUSES)}))`);
      await db.raw(`alter table backups add constraint backups_method check (method in (${list(BACKUP_METHODS)}))`);
      await db.raw('create index backups_pending on backups (created_at) where not started');
      await db.raw('create index backups_deleting on backups (deleting_since) where deleting_since is not null');
      await db.raw("create index backups_running on backups (database_id) where started and status = 'running'");

      await db.schema.createTable('backup_schedules', (t) => {
        t.uuid('database_id').primary().references('id').inTable('databases').onDelete('CASCADE');
        t.text('schedule').notNullable();
        t.integer('retention_count').notNullable();
        t.boolean('enabled').notNullable();
        t.timestamp('next_run_at', { useTz: true });
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
      });
      await db.raw(
        `alter table backup_schedules add constraint backup_schedules_retention check (retention_count between ${RETENTION_COUNT.min} and ${RETENTION_COUNT.max})`,
      );
      await db.raw('create index backup_schedules_due on backup_schedules (next_run_at) where enabled');

      await db.schema.alterTable('databases', (t) => {
        // A database made from another's backup (restore, fork): what it was made from.
        t.jsonb('restore_source');
        // postgresql: how far the archive was sealed when the database was deleted.
        t.timestamp('archived_until', { useTz: true });
        // A deleted database's backups are kept for a while, then purged.
        t.timestamp('backups_purged_at', { useTz: true });
      });
      await db.raw('create index databases_purge_due on databases (deleted_at) where deleted_at is not null and backups_purged_at is null');

      // Databases that exist already get the default schedule every new one gets.
      const now = new Date();
      const live = (await db('databases').whereNull('deleted_at').select('id')) as { id: string }[];
      for (const { id } of live) {
        const schedule = defaultSchedule(id);
        await db('backup_schedules').insert({
          database_id: id,
          schedule,
          retention_count: RETENTION_COUNT.default,
          enabled: true,
          next_run_at: nextFireTime(schedule, now),
        });
      }
    },
    async down(db) {
      await db.schema.dropTable('backup_schedules');
      await db.schema.dropTable('backups');
      await db.schema.alterTable('databases', (t) => {
        t.dropColumn('restore_source');
        t.dropColumn('archived_until');
        t.dropColumn('backups_purged_at');
      });
    },
  },
  {
    name: '0005_idempotency_keys',
    up: (db) => createIdempotencyTable(db),
    down: (db) => db.schema.dropTable('idempotency_keys'),
  },
  {
    // Leases: one change per resource and one leader per background loop across instances (kit's leases.ts).
    name: '0006_leases',
    up: (db) => createLeasesTable(db),
    down: (db) => db.schema.dropTable('leases'),
  },
];
