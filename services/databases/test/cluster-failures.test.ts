// What the cluster does wrong, and what the API then says: an unreachable engine is a
// 503 with nothing written; a database that cannot get healthy reads as `error`; one
// that dies outside Pier is resynced to `error` on the next read, and back to running.
import { afterAll, describe, expect, it } from 'vitest';
import Docker from 'dockerode';
import pg from 'pg';
import { DockerCluster } from '../src/cluster/docker.ts';
import { startDatabases, waitFor, type Harness } from './support.ts';

const harnesses: Harness[] = [];
afterAll(async () => {
  for (const h of harnesses) await h.stop();
});

async function rows(h: Harness, table: string): Promise<number> {
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
    const cluster = new DockerCluster({
      docker: new Docker({ socketPath: '/nonexistent/docker.sock' }),
      postgresImage: 'pier/pg-managed:15',
      mysqlImage: 'pier/mariadb:10.11',
      publishAddress: '127.0.0.1',
    });
    const h = await startDatabases({}, { cluster });
    harnesses.push(h);
    const res = await h.call('POST', h.base, { name: 'nowhere' });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: expect.stringContaining('docker engine unreachable'), code: 'cluster_unavailable' });
    expect(await rows(h, 'databases')).toBe(0);
    expect(await rows(h, 'outbox')).toBe(0);
    expect((await h.call('GET', h.base)).status).toBe(200); // an empty list needs no cluster call
  });
});

describe('a database that cannot get healthy', () => {
  it('reads as error, with the reason', async () => {
    // An image whose server exits at once: the container restart-loops.
    const h = await startDatabases({ PIER_DATABASES_POSTGRES_IMAGE: 'pier/exits:1' });
    harnesses.push(h);
    const res = await h.call('POST', h.base, { name: 'broken' });
    expect(res.status).toBe(202);
    const failed = await waitFor(async () => {
      const r = await h.call('GET', `${h.base}/${res.body.id}`);
      return r.body.status === 'error' ? r.body : undefined;
    });
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
    const cluster = new DockerCluster({ docker: counted.docker, postgresImage: 'pier/pg-managed:15', mysqlImage: 'pier/mariadb:10.11', publishAddress: '127.0.0.1' });
    const h = await startDatabases({}, { cluster });
    harnesses.push(h);
    const res = await h.call('POST', h.base, { name: 'flaky' });
    const res2 = await h.call('POST', h.base, { name: 'steady' });
    const one = `${h.base}/${res.body.id}`;
    await waitFor(async () => ((await h.call('GET', one)).body.status === 'running' ? true : undefined));
    await waitFor(async () => ((await h.call('GET', `${h.base}/${res2.body.id}`)).body.status === 'running' ? true : undefined));
    // Live status of a whole list is one Engine API call.
    counted.calls.length = 0;
    const list = await h.call('GET', h.base);
    expect(list.body.items.map((d: { status: string }) => d.status)).toEqual(['running', 'running']);
    expect(counted.calls).toEqual(['listContainers']);
    const docker = new Docker();
    await docker.getContainer(`pier-db-${res.body.id}`).stop();
    const down = await h.call('GET', one);
    expect(down.body).toMatchObject({ status: 'error', status_reason: expect.stringContaining('server exited') });
    const listed = await h.call('GET', h.base);
    expect(listed.body.items.map((d: { status: string }) => d.status)).toEqual(['error', 'running']);
    expect((await h.call('POST', `${one}/query`, { sql: 'select 1' })).body.code).toBe('database_not_running');
    await docker.getContainer(`pier-db-${res.body.id}`).start();
    await waitFor(async () => ((await h.call('GET', one)).body.status === 'running' ? true : undefined));
    expect((await h.call('POST', `${one}/query`, { sql: 'select 1' })).status).toBe(200);
  });
});
