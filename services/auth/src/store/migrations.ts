import { createIdempotencyTable, createOutboxTable, type Knex, type Migration } from '@pier/kit';

export const SCHEMA = 'auth';

// Timestamps are kept at millisecond precision: that is what a JS Date (and so every API
// timestamp and pagination cursor) carries, so a cursor compares equal to its row.
const ts = (t: Knex.CreateTableBuilder, name: string) => t.timestamp(name, { useTz: true, precision: 3 });

export const migrations: Migration[] = [
  {
    name: '0001_outbox',
    up: (db) => createOutboxTable(db),
    down: (db) => db.schema.dropTable('outbox'),
  },
  {
    name: '0002_identity',
    async up(db) {
      await db.schema.createTable('users', (t) => {
        t.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
        // Stored lower-cased: e-mail addresses are compared case-insensitively.
        t.text('email').notNullable().unique();
        ts(t, 'created_at').notNullable().defaultTo(db.fn.now());
      });
      await db.schema.createTable('workspaces', (t) => {
        t.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
        t.text('name').notNullable();
        t.uuid('created_by').references('id').inTable('users');
        ts(t, 'created_at').notNullable().defaultTo(db.fn.now());
      });
      await db.schema.createTable('memberships', (t) => {
        t.uuid('workspace_id').notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
        t.uuid('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
        t.text('role').notNullable();
        ts(t, 'created_at').notNullable().defaultTo(db.fn.now());
        t.primary(['workspace_id', 'user_id']);
        t.index(['user_id', 'workspace_id']);
      });
      await db.raw(`alter table memberships add constraint memberships_role_check check (role in ('owner','admin','developer','viewer'))`);
      await db.schema.createTable('vpcs', (t) => {
        t.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
        t.uuid('workspace_id').notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
        t.text('name').notNullable();
        ts(t, 'created_at').notNullable().defaultTo(db.fn.now());
        t.unique(['workspace_id', 'name']);
      });
      await db.schema.createTable('api_keys', (t) => {
        t.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
        t.uuid('workspace_id').notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
        t.uuid('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
        t.text('name').notNullable();
        t.text('key_prefix').notNullable();
        // SHA-256 of the whole key, hex. The key itself is never stored.
        t.text('key_hash').notNullable().unique();
        t.jsonb('scopes').notNullable().defaultTo('[]');
        ts(t, 'expires_at');
        ts(t, 'created_at').notNullable().defaultTo(db.fn.now());
        ts(t, 'last_used_at');
        ts(t, 'revoked_at');
      });
      // Names are unique among a workspace's live keys; a revoked key frees its name.
      await db.raw(`create unique index api_keys_workspace_name_live on api_keys (workspace_id, name) where revoked_at is null`);
      await db.raw(`create index api_keys_workspace_listing on api_keys (workspace_id, created_at, id) where revoked_at is null`);
      await db.schema.createTable('cli_sessions', (t) => {
        t.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
        t.uuid('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
        t.text('name');
        t.text('token_hash').notNullable().unique();
        ts(t, 'expires_at').notNullable();
        ts(t, 'created_at').notNullable().defaultTo(db.fn.now());
        ts(t, 'last_used_at');
        ts(t, 'revoked_at');
        t.index(['user_id', 'created_at', 'id']);
      });
      // One row, written by the first start of auth against an empty database.
      await db.schema.createTable('bootstrap', (t) => {
        t.integer('id').primary().defaultTo(1);
        t.uuid('user_id').notNullable();
        t.uuid('workspace_id').notNullable();
        t.uuid('vpc_id').notNullable();
        t.uuid('api_key_id').notNullable();
        ts(t, 'created_at').notNullable().defaultTo(db.fn.now());
      });
      await db.raw(`alter table bootstrap add constraint bootstrap_single_row check (id = 1)`);
    },
    async down(db) {
      for (const table of ['bootstrap', 'cli_sessions', 'api_keys', 'vpcs', 'memberships', 'workspaces', 'users']) {
        await db.schema.dropTable(table);
      }
    },
  },
  {
    name: '0003_idempotency_keys',
    up: (db) => createIdempotencyTable(db),
    down: (db) => db.schema.dropTable('idempotency_keys'),
  },
  {
    // The auth epoch (kit's auth-epoch.ts): one counter, raised in the transaction of every
    // change that can alter an Authenticate answer, so gateways know their cached answers
    // are void. One row; updating it also serialises such changes, so epochs commit in order.
    name: '0004_auth_epoch',
    async up(db) {
      await db.schema.createTable('auth_epoch', (t) => {
        t.integer('id').primary().defaultTo(1);
        t.bigInteger('epoch').notNullable().defaultTo(0);
        // Names this installation's subjects on NATS: two installations may share a broker.
        t.uuid('installation').notNullable().defaultTo(db.raw('gen_random_uuid()'));
      });
      await db.raw(`alter table auth_epoch add constraint auth_epoch_single_row check (id = 1)`);
      await db('auth_epoch').insert({ id: 1, epoch: 0 });
    },
    down: (db) => db.schema.dropTable('auth_epoch'),
  },
  {
    // A CLI session minted with an API key rides on it: revoked in the key's revoke, judged
    // with the key on every request. Null for a session minted any other way (and for
    // those minted before this migration: nothing recorded which key, if any, made them).
    name: '0005_cli_session_api_key',
    async up(db) {
      await db.schema.alterTable('cli_sessions', (t) => {
        t.uuid('api_key_id').references('id').inTable('api_keys').onDelete('CASCADE');
      });
      // The key's revoke finds its sessions by this.
      await db.raw(`create index cli_sessions_api_key on cli_sessions (api_key_id) where api_key_id is not null`);
    },
    async down(db) {
      await db.schema.alterTable('cli_sessions', (t) => {
        t.dropColumn('api_key_id');
      });
    },
  },
];
