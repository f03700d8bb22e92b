import { createIdempotencyTable, createInstallationTable, createLeasesTable, createOutboxTable, type Migration } from '@pier/kit';

export const SCHEMA = 'secrets';

// Secret records hold names and key names only. The values live in the cluster's secret
// store; there is deliberately no column that could hold them.
export const migrations: Migration[] = [
  {
    name: '0001_outbox',
    up: (db) => createOutboxTable(db),
    down: (db) => db.schema.dropTable('outbox'),
  },
  {
    name: '0002_secrets',
    up: async (db) => {
      await db.raw(`
        create table secrets (
          id uuid primary key default gen_random_uuid(),
          -- keyset pagination order: exact, unlike timestamps rounded to milliseconds in JS
          seq bigint generated always as identity unique,
          workspace_id text not null,
          vpc_id text not null,
          name text not null,
          keys text[] not null,
          -- creating/deleting: a store write is in flight (or a crash interrupted one);
          -- such records are invisible to the API and finished by the reconciler
          state text not null check (state in ('creating', 'ready', 'deleting')),
          created_at timestamptz not null default now(),
          updated_at timestamptz not null default now(),
          constraint secrets_vpc_name_unique unique (vpc_id, name)
        )`);
      await db.raw(`create index secrets_listing on secrets (workspace_id, vpc_id, seq) where state = 'ready'`);
      await db.raw(`create index secrets_pending on secrets (updated_at) where state <> 'ready'`);
    },
    down: (db) => db.schema.dropTable('secrets'),
  },
  {
    // Lists page by (created_at, id) like every other list (kit's keysetPage keeps the
    // cursor exact to the microsecond), so the sequence column that stood in for it goes.
    name: '0003_keyset_by_created_at',
    up: async (db) => {
      await db.raw('drop index secrets_listing');
      await db.raw('alter table secrets drop column seq');
      await db.raw(`create index secrets_listing on secrets (workspace_id, vpc_id, created_at, id) where state = 'ready'`);
    },
    down: async (db) => {
      await db.raw('drop index secrets_listing');
      await db.raw('alter table secrets add column seq bigint generated always as identity unique');
      await db.raw(`create index secrets_listing on secrets (workspace_id, vpc_id, seq) where state = 'ready'`);
    },
  },
  {
    name: '0004_idempotency_keys',
    up: (db) => createIdempotencyTable(db),
    down: (db) => db.schema.dropTable('idempotency_keys'),
  },
  {
    // This installation's id, labelled on its Secrets on kubernetes: the sweep of Secrets
    // without a record lists only this installation's (another Pier may share the cluster).
    name: '0005_installation',
    up: (db) => createInstallationTable(db),
    down: (db) => db.schema.dropTable('installation'),
  },
  {
    // Leases: one leader for the reconciler across instances (kit's leases.ts).
    name: '0006_leases',
    up: (db) => createLeasesTable(db),
    down: (db) => db.schema.dropTable('leases'),
  },
];
