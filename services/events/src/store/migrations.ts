import { createIdempotencyTable, createInstallationTable, createLeasesTable, createOutboxTable, type Migration } from '@pier/kit';

export const SCHEMA = 'events';

export const migrations: Migration[] = [
  {
    // Every service has one (kit's relay reads it); events writes none of its own yet.
    name: '0001_outbox',
    up: (db) => createOutboxTable(db),
    down: (db) => db.schema.dropTable('outbox'),
  },
  {
    name: '0002_events',
    up: async (db) => {
      await db.raw(`
        create table events (
          -- the order events were stored in: a follower resumes after a seq (one consumer
          -- stores at a time, in one transaction per batch, so seqs commit in order)
          seq bigint generated always as identity primary key,
          -- the event's id (the outbox gave it): stored once, whatever JetStream redelivers
          id uuid not null unique,
          stream_seq bigint,
          type text not null,
          occurred_at timestamptz not null,
          workspace_id text,
          vpc_id text,
          resource_kind text not null,
          resource_id text not null,
          resource_name text,
          actor jsonb,
          actor_id text,
          source_ip text,
          data jsonb not null,
          stored_at timestamptz not null default now()
        )`);
      await db.raw(`create index events_listing on events (workspace_id, occurred_at desc, id desc)`);
      await db.raw(`create index events_following on events (workspace_id, seq)`);
      await db.raw(`create index events_resource on events (workspace_id, resource_id)`);
      await db.raw(`create index events_retention on events (occurred_at)`);
    },
    down: (db) => db.schema.dropTable('events'),
  },
  {
    name: '0003_idempotency_keys',
    up: (db) => createIdempotencyTable(db),
    down: (db) => db.schema.dropTable('idempotency_keys'),
  },
  {
    // This installation's id: it names the durable consumer, so installations sharing one
    // NATS each read the whole stream.
    name: '0004_installation',
    up: (db) => createInstallationTable(db),
    down: (db) => db.schema.dropTable('installation'),
  },
  {
    // Leases: one instance consumes the stream and trims at a time.
    name: '0005_leases',
    up: (db) => createLeasesTable(db),
    down: (db) => db.schema.dropTable('leases'),
  },
];
