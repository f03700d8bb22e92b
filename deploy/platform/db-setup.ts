/**
 * `pier-platform db-setup`: what the chart's db-setup Job runs before the services start.
 * With the admin URL (PIER_ADMIN_DATABASE_URL, the only place it is used) it gives each
 * service its login role and schema (kit's provisionServiceRoles, idempotent; passwords from
 * PIER_<SERVICE>_DATABASE_PASSWORD), then runs every service's migrations as that service's
 * own role, so the tables belong to the role that uses them, as when a service migrates
 * itself at start. PostgreSQL may still be starting (the chart's own one is created with
 * this Job): connecting is retried for PIER_DB_SETUP_WAIT_SECONDS (default 300).
 */
import { createDb, migrate, provisionServiceRoles, type ServiceSchema } from '@pier/kit';
import { MIGRATIONS, retrying, servicePasswords } from './schemas.ts';

async function main(): Promise<void> {
  const adminUrl = process.env.PIER_ADMIN_DATABASE_URL;
  if (!adminUrl) throw new Error('PIER_ADMIN_DATABASE_URL is required');
  const wait = Number(process.env.PIER_DB_SETUP_WAIT_SECONDS || 300);
  const urls = await retrying('provisioning the service roles', wait, () => provisionServiceRoles(adminUrl, servicePasswords(process.env)));
  for (const schema of Object.keys(MIGRATIONS) as ServiceSchema[]) {
    const db = createDb(urls[schema], schema, 2);
    try {
      await migrate(db, schema, MIGRATIONS[schema]);
    } finally {
      await db.destroy();
    }
    console.log(`${schema}: ${MIGRATIONS[schema].length} migrations applied`);
  }
}

main().catch((err: Error) => {
  console.error(`db-setup failed: ${err.message}`);
  process.exit(1);
});
