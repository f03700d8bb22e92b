/**
 * The migrations of every service that owns a schema, for the platform image's database
 * set-up (db-setup.ts) and its start gate (wait-migrated.ts). The services themselves run
 * the same list at start; in Kubernetes a Job runs it first so no pod starts on an old schema.
 */
import type { Migration, ServiceSchema } from '@pier/kit';
import * as auth from '../../services/auth/src/store/migrations.ts';
import * as compute from '../../services/compute/src/store/migrations.ts';
import * as databases from '../../services/databases/src/store/migrations.ts';
import * as secrets from '../../services/secrets/src/store/migrations.ts';
import * as events from '../../services/events/src/store/migrations.ts';

export const MIGRATIONS: Record<ServiceSchema, Migration[]> = {
  auth: auth.migrations,
  compute: compute.migrations,
  databases: databases.migrations,
  secrets: secrets.migrations,
  events: events.migrations,
};

/** The role password of each service, from PIER_<SERVICE>_DATABASE_PASSWORD (the chart's Secret). */
export function servicePasswords(env: NodeJS.ProcessEnv): Record<ServiceSchema, string> {
  const entries = Object.keys(MIGRATIONS).map((s) => {
    const name = `PIER_${s.toUpperCase()}_DATABASE_PASSWORD`;
    const value = env[name];
    if (!value) throw new Error(`${name} is required`);
    return [s, value];
  });
  return Object.fromEntries(entries) as Record<ServiceSchema, string>;
}

/** Retries `fn` every second until it succeeds or `seconds` pass; says why every 10 s. */
export async function retrying<T>(what: string, seconds: number, fn: () => Promise<T>): Promise<T> {
  const until = Date.now() + seconds * 1000;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > until) throw new Error(`${what}: gave up after ${seconds}s: ${(err as Error).message}`, { cause: err });
      if (attempt % 10 === 0) console.log(`${what}: ${(err as Error).message}; retrying`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}
