import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { DATABASE_ACQUIRE_TIMEOUT_MS, DATABASE_CONNECT_TIMEOUT_MS } from './config.ts';

export type { Knex };

// Timestamps come back as ISO strings in UTC everywhere in the API; bigint counts as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export interface Migration {
  name: string;
  up(db: Knex): Promise<void>;
  down(db: Knex): Promise<void>;
}

export interface DbTimeouts {
  /** Longest a new connection may take to be established (PIER_DATABASE_CONNECT_TIMEOUT_MS). */
  connectMs?: number;
  /** Longest a query waits for a connection of the pool, busy or being made (PIER_DATABASE_ACQUIRE_TIMEOUT_MS). */
  acquireMs?: number;
}

/**
 * A knex pool whose unqualified names resolve in the service's own schema.
 *
 * With the database away, a query fails fast rather than waiting: a refused connection
 * fails the query waiting for it at once (knex's `propagateCreateError`), and one that
 * hangs is given up after `connectMs` (pg waits forever by default, knex's pool 60 s).
 * Both surface as 503 `unavailable` through pgErrorOf. Dead connections are never handed
 * out again: knex marks a connection that errored or ended (the server shut down) and its
 * pool's validation discards it, so the pool refills with new connections once the
 * database is back and the service recovers without a restart.
 */
export function createDb(url: string, schema: string, poolMax = 10, timeouts: DbTimeouts = {}): Knex {
  return knexFactory({
    client: 'pg',
    connection: { connectionString: url, connectionTimeoutMillis: timeouts.connectMs ?? DATABASE_CONNECT_TIMEOUT_MS },
    searchPath: [schema],
    acquireConnectionTimeout: timeouts.acquireMs ?? DATABASE_ACQUIRE_TIMEOUT_MS,
    pool: { min: 0, max: poolMax },
  });
}

/**
 * Runs the service's migrations; the bookkeeping table lives in the service's schema too.
 * An advisory lock (keyed by the schema) is held meanwhile, so several instances of one
 * service starting at once migrate one after the other: knex's own lock table is itself
 * created racily. The lock sits in a transaction on one pooled connection while knex
 * migrates on others.
 */
export async function migrate(db: Knex, schema: string, migrations: Migration[], direction: 'up' | 'down' = 'up'): Promise<void> {
  await db.transaction(async (trx) => {
    await trx.raw("select pg_advisory_xact_lock(hashtext('pier.migrate.' || ?))", [schema]);
    await runMigrations(db, schema, migrations, direction);
  });
}

async function runMigrations(db: Knex, schema: string, migrations: Migration[], direction: 'up' | 'down'): Promise<void> {
  // `create schema if not exists` checks CREATE on the database before it looks for the
  // schema, and a service role (see provisionServiceRoles) has no such right: its schema
  // was made for it. Create only when it is really missing (a superuser URL in dev).
  const existing = await db.raw('select 1 from pg_namespace where nspname = ?', [schema]);
  if (existing.rows.length === 0) await db.raw('create schema ??', [schema]);
  const config: Knex.MigratorConfig = {
    schemaName: schema,
    tableName: 'migrations',
    migrationSource: {
      getMigrations: async () => migrations,
      getMigrationName: (m: Migration) => m.name,
      getMigration: async (m: Migration) => ({ up: (k: Knex) => m.up(k), down: (k: Knex) => m.down(k) }),
    },
  };
  if (direction === 'up') await db.migrate.latest(config);
  else await db.migrate.rollback(config, true);
}

export function isUuid(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
}

export const SERVICE_SCHEMAS = ['auth', 'compute', 'databases', 'secrets', 'events'] as const;
export type ServiceSchema = (typeof SERVICE_SCHEMAS)[number];

/**
 * Gives each service its own login role and a schema it owns, in the database of
 * `adminUrl`, and returns each service's connection URL. A service's role cannot read
 * another service's schema. Idempotent.
 */
export async function provisionServiceRoles(adminUrl: string, passwords: Record<ServiceSchema, string>): Promise<Record<ServiceSchema, string>> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ db: string }>('select current_database() as db');
    const database = rows[0]!.db;
    const urls = {} as Record<ServiceSchema, string>;
    for (const service of SERVICE_SCHEMAS) {
      const role = `pier_${service}`;
      const password = passwords[service];
      // A role left by an earlier provisioning is reused; its password is set anew below.
      try {
        await client.query(`create role ${role} login`);
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code !== '42710' && code !== '23505') throw err;
      }
      // Roles are cluster-wide, and advisory locks are per database: two databases of one
      // server provisioned at once (parallel test files) can collide on the same role row.
      await retryConcurrentUpdate(() => client.query(`alter role ${role} login password ${pg.escapeLiteral(password)}`));
      await retryConcurrentUpdate(() => client.query(`grant connect, temporary on database ${pg.escapeIdentifier(database)} to ${role}`));
      await client.query(`create schema if not exists ${service} authorization ${role}`);
      await client.query(`revoke all on schema ${service} from public`);
      const url = new URL(adminUrl);
      url.username = role;
      url.password = password;
      urls[service] = url.toString();
    }
    await client.query('revoke create on schema public from public');
    return urls;
  } finally {
    await client.end();
  }
}

async function retryConcurrentUpdate<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const concurrent = /tuple concurrently updated/.test(String((err as Error).message));
      if (!concurrent || attempt >= 20) throw err;
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 80));
    }
  }
}
