// Values test/global-setup.ts hands to every test file via `inject(...)`.
import 'vitest';

declare module 'vitest' {
  interface ProvidedContext {
    /** Superuser URL to the `postgres` database of the shared test PostgreSQL. */
    postgresAdminUrl: string;
    /** nats://127.0.0.1:<port> of the shared test NATS (JetStream enabled). */
    natsUrl: string;
  }
}
