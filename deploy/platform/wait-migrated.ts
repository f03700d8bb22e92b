/**
 * `pier-platform wait-migrated <service>`: a service pod's init container. It returns once
 * every migration this image's code knows for the service is recorded in the service's
 * schema (the db-setup Job applies them), so a new version never starts on an old schema,
 * and needs nothing but the service's own PIER_DATABASE_URL. It waits up to
 * PIER_WAIT_MIGRATED_SECONDS (default 600), then fails (and the kubelet retries the pod).
 */
import pg from 'pg';
import { SERVICE_SCHEMAS, type ServiceSchema } from '@pier/kit';
import { MIGRATIONS, retrying } from './schemas.ts';

async function applied(url: string, schema: ServiceSchema): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(`select name from ${pg.escapeIdentifier(schema)}.migrations`);
    const done = new Set(rows.map((r) => r.name));
    const missing = MIGRATIONS[schema].filter((m) => !done.has(m.name)).map((m) => m.name);
    if (missing.length) throw new Error(`${missing.length} migrations not applied yet (first: ${missing[0]})`);
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  const schema = process.argv[2] as ServiceSchema;
  if (!SERVICE_SCHEMAS.includes(schema)) throw new Error(`usage: wait-migrated <${SERVICE_SCHEMAS.join('|')}>`);
  const url = process.env.PIER_DATABASE_URL;
  if (!url) throw new Error('PIER_DATABASE_URL is required');
  const seconds = Number(process.env.PIER_WAIT_MIGRATED_SECONDS || 600);
  await retrying(`waiting for the ${schema} migrations`, seconds, () => applied(url, schema));
  console.log(`${schema}: schema up to date`);
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
