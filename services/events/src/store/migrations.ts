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
  {
    // Webhook endpoints (their signing secrets: needed to sign, so kept; never answered
    // but once), what is to be delivered to them, and every attempt.
    name: '0006_webhooks',
    up: async (db) => {
      await db.raw(`
        create table webhooks (
          id uuid primary key default gen_random_uuid(),
          workspace_id text not null,
          url text not null,
          events text[] not null,
          description text not null default '',
          enabled boolean not null,
          disabled_reason text,
          secret text not null,
          previous_secret text,
          previous_secret_until timestamptz,
          created_at timestamptz not null default now(),
          updated_at timestamptz not null default now()
        )`);
      await db.raw(`create index webhooks_listing on webhooks (workspace_id, created_at, id)`);
      await db.raw(`
        create table webhook_deliveries (
          id uuid primary key default gen_random_uuid(),
          webhook_id uuid not null references webhooks (id) on delete cascade,
          event_id uuid not null,
          event_type text not null,
          event jsonb not null,
          occurred_at timestamptz not null,
          state text not null check (state in ('pending', 'succeeded', 'failed')),
          attempts_in_round int not null default 0,
          next_attempt_at timestamptz,
          created_at timestamptz not null default now(),
          unique (webhook_id, event_id)
        )`);
      await db.raw(`create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where state = 'pending'`);
      await db.raw(`create index webhook_deliveries_listing on webhook_deliveries (webhook_id, created_at, id)`);
      await db.raw(`
        create table webhook_attempts (
          id bigint generated always as identity primary key,
          delivery_id uuid not null references webhook_deliveries (id) on delete cascade,
          attempted_at timestamptz not null default now(),
          status_code int,
          latency_ms int not null,
          response text,
          error text
        )`);
      await db.raw(`create index webhook_attempts_delivery on webhook_attempts (delivery_id, id)`);
    },
    down: async (db) => {
      await db.schema.dropTable('webhook_attempts');
      await db.schema.dropTable('webhook_deliveries');
      await db.schema.dropTable('webhooks');
    },
  },
];
