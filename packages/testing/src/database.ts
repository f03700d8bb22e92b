import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { provisionServiceRoles, SERVICE_SCHEMAS, type ServiceSchema } from '@pier/kit';

export interface TestDatabase {
  /** Superuser URL of this database (test set-up and inspection). */
  adminUrl: string;
  /** Each service's own login, as in production. */
  urls: Record<ServiceSchema, string>;
  drop(): Promise<void>;
}

/**
 * A fresh database on the test PostgreSQL server, with each service's role and schema as
 * in production. Each test file gets its own, so files run in parallel without sharing rows.
 */
export async function createTestDatabase(adminUrl: string): Promise<TestDatabase> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const dbUrl = new URL(adminUrl);
  dbUrl.pathname = `/${name}`;
  const passwords = Object.fromEntries(SERVICE_SCHEMAS.map((s) => [s, `test-${s}-password`])) as Record<ServiceSchema, string>;
  const urls = await provisionServiceRoles(dbUrl.toString(), passwords);
  return {
    adminUrl: dbUrl.toString(),
    urls,
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

/** One query as the superuser: set-up a test needs (ageing a row) and inspection (pending rows). */
export async function adminQuery<T extends pg.QueryResultRow = any>(adminUrl: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}
