// The start-up skeleton: a start that fails part way stops what it had started.
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { createTestDatabase, infra } from '@pier/testing';
import { generateIdentityKeys, startService, type Migration } from '../src/index.ts';

const migrations: Migration[] = [];

async function connectionsOf(adminUrl: string, role: string): Promise<number> {
  const pg = (await import('pg')).default;
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    // This test's database only: other test files use the same role on the shared server at the same time.
    const { rows } = await c.query('select count(*)::int as n from pg_stat_activity where usename = $1 and datname = current_database()', [role]);
    return rows[0].n;
  } finally {
    await c.end();
  }
}

describe('startService', () => {
  it('serves health, and on a failed start (port in use) leaves no pool, relay or listener behind', async () => {
    const t = await createTestDatabase(infra().postgresAdminUrl);
    const keys = await generateIdentityKeys();
    const config = {
      PIER_DATABASE_URL: t.urls.compute,
      PIER_NATS_URL: infra().natsUrl,
      PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
      PIER_BIND_HOST: '127.0.0.1',
      PIER_LOG_LEVEL: 'silent',
    };
    let stopped = 0;
    const spec = (httpPort: number) => ({
      name: 'compute',
      config,
      httpPort,
      schema: 'compute',
      migrations,
      wire: async ({ onStop }: { onStop: (what: string, fn: () => unknown) => void }) => {
        onStop('probe', () => stopped++);
        return { routes: [] };
      },
    });
    const ok = await startService(spec(0));
    expect(await (await fetch(`http://127.0.0.1:${ok.httpPort}/healthz`)).json()).toEqual({ status: 'ok', service: 'compute' });

    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const taken = (blocker.address() as net.AddressInfo).port;
    await expect(startService(spec(taken))).rejects.toThrow(/EADDRINUSE/);
    expect(stopped).toBe(1); // the failed start's own parts were stopped
    await ok.stop();
    expect(stopped).toBe(2);
    blocker.close();
    // Every pool is closed: no session of the service role remains.
    await expect.poll(() => connectionsOf(t.adminUrl, 'pier_compute'), { timeout: 5000 }).toBe(0);
    await t.drop();
  });
});
