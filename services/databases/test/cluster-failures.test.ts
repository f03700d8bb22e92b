// What the cluster does wrong, and what the API then says: an unreachable engine is a
// 503 with nothing written; a database that cannot get healthy reads as `error`; one
// that dies outside Pier is resynced to `error` on the next read, and back to running.
import { afterAll, describe, expect, it } from 'vitest';
import Docker from 'dockerode';
import pg from 'pg';
import { startDatabases, testDockerCluster, until, type Databases } from './support.ts';

const harnesses: Databases[] = [];
afterAll(async () => {
  for (const h of harnesses) await h.stop();
});

async function rows(h: Databases, table: string): Promise<number> {
  const c = new pg.Client({ connectionString: h.db.urls.databases });
  await c.connect();
  try {
    return (await c.query(`select count(*)::int as n from databases.${table}`)).rows[0].n;
  } finally {
    await c.end();
  }
}

describe('an unreachable docker engine', () => {
  it('refuses provisioning with 503 and writes nothing', async () => {
    const cluster = testDockerCluster({ docker: new Docker({ socketPath: '/nonexistent/docker.sock' }) });
    const h = await startDatabases({}, { cluster: () => cluster });
    harnesses.push(h);
    const res = await h.request('POST', h.base, { name: 'nowhere' });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: expect.stringContaining('docker engine unreachable'), code: 'cluster_unavailable' });
    expect(await rows(h, 'databases')).toBe(0);
    expect(await rows(h, 'outbox')).toBe(0);
    expect((await h.request('GET', h.base)).status).toBe(200); // an empty list needs no cluster call
  });
});

describe('a database that cannot get healthy', () => {
  it('reads as error, with the reason', async () => {
    // An image whose server exits at once: the container restart-loops.
    const h = await startDatabases({ PIER_DATABASES_POSTGRES_IMAGE: 'pier/exits:1' });
    harnesses.push(h);
    const res = await h.request('POST', h.base, { name: 'broken' });
    expect(res.status).toBe(202);
    const failed = await until(
      () => h.request('GET', `${h.base}/${res.body.id}`).then((r) => r.body),
      (db) => db.status === 'error',
      60_000,
    );
    expect(failed.status_reason).toMatch(/server (keeps exiting|exited)/);
  });
});

/** A Docker client that counts the Engine API methods called on it. */
function countingDocker(): { docker: Docker; calls: string[] } {
  const calls: string[] = [];
  const docker = new Proxy(new Docker(), {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function' || typeof prop !== 'string') return v;
      return (...args: unknown[]) => {
        calls.push(prop);
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { docker, calls };
}

describe('a database stopped outside Pier', () => {
  it('is resynced to error on the next read, and to running once it is back', async () => {
    const counted = countingDocker();
    const cluster = testDockerCluster({ docker: counted.docker });
    // Without the installation's label the adapter lists nothing to sweep, and the
    // reconciler's passes are far apart: the only Engine API calls counted are the list's.
    const h = await startDatabases({ PIER_DATABASES_RECONCILE_INTERVAL_MS: '600000' }, { cluster: () => cluster });
    harnesses.push(h);
    const res = await h.request('POST', h.base, { name: 'flaky' });
    const res2 = await h.request('POST', h.base, { name: 'steady' });
    const one = `${h.base}/${res.body.id}`;
    const status = (path: string) => h.request('GET', path).then((r) => r.body.status);
    await until(
      () => status(one),
      (s) => s === 'running',
      60_000,
    );
    await until(
      () => status(`${h.base}/${res2.body.id}`),
      (s) => s === 'running',
      60_000,
    );
    // Live status of a whole list is one Engine API call.
    counted.calls.length = 0;
    const list = await h.request('GET', h.base);
    expect(list.body.items.map((d: { status: string }) => d.status)).toEqual(['running', 'running']);
    expect(counted.calls).toEqual(['listContainers']);
    const docker = new Docker();
    await docker.getContainer(`pier-db-${res.body.id}`).stop();
    const down = await h.request('GET', one);
    expect(down.body).toMatchObject({ status: 'error', status_reason: expect.stringContaining('server exited') });
    const listed = await h.request('GET', h.base);
    expect(listed.body.items.map((d: { status: string }) => d.status)).toEqual(['error', 'running']);
    expect((await h.request('POST', `${one}/query`, { sql: 'select 1' })).body.code).toBe('database_not_running');
    await docker.getContainer(`pier-db-${res.body.id}`).start();
    await until(
      () => status(one),
      (s) => s === 'running',
      60_000,
    );
    expect((await h.request('POST', `${one}/query`, { sql: 'select 1' })).status).toBe(200);
  });
});
