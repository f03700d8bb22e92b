// The connection details on the local default (no external domain configured), used as
// they stand from this machine: `psql "$external_url"` and `mysql` with external_host and
// external_port, with no host override and no DNS of ours. With replicas, external_url_ro
// (external_host_ro and external_port_ro) reads from a replica, never the primary.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';
import { until } from '@pier/testing';
import { DATABASES_ENV, cleanupVpc, mysqlCli, psql, run, waitForStatus } from './databases-helpers.ts';

let p: Platform;
let owner: Api;
let base: string;

beforeAll(async () => {
  p = await startPlatform({ env: { databases: { ...DATABASES_ENV, PIER_POSTGRES_EXTERNAL_DOMAIN: undefined, PIER_MYSQL_EXTERNAL_DOMAIN: undefined } } });
  owner = p.api(p.bootstrap.token);
  base = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/databases`;
});

afterAll(async () => {
  await p?.stop();
  if (p) await cleanupVpc(p.bootstrap.vpcId);
});

async function provision(body: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await owner.post(base, { ...body, external_access_enabled: true });
  expect(res.status).toBe(202);
  await waitForStatus(owner, `${base}/${res.body.id}`, 'running');
  const conn = await owner.get(`${base}/${res.body.id}/connection`);
  expect(conn.status).toBe(200);
  return { id: res.body.id, ...conn.body };
}

/** The connection details once replica 1 runs and publishes its port (until then reads from outside go to the primary). */
async function withReplicaPort(id: string): Promise<Record<string, any>> {
  return until(
    async () => (await owner.get(`${base}/${id}/connection`)).body,
    (c) => c.external_port_ro !== c.external_port,
    120_000,
  );
}

describe('connection details on the local default', () => {
  it('psql connects with external_url exactly as returned', async () => {
    const conn = await provision({ name: 'local-pg' });
    expect(conn.external_host).toBe('127.0.0.1');
    expect(conn.external_url).toBe(`postgresql://${conn.username}:${conn.password}@127.0.0.1:${conn.external_port}/${conn.database}`);
    const r = await psql(conn.external_url, 'select current_database()');
    expect(r).toMatchObject({ code: 0 });
    expect(r.stdout.trim()).toBe(conn.database);
  });

  it('mysql connects with external_host and external_port exactly as returned', async () => {
    const conn = await provision({ name: 'local-my', engine: 'mysql' });
    expect(conn.external_host).toBe('127.0.0.1');
    const r = await run('mysql', [
      '-h',
      conn.external_host,
      '-P',
      String(conn.external_port),
      '-u',
      conn.username,
      `-p${conn.password}`,
      '--connect-timeout=10',
      '--batch',
      '--skip-column-names',
      conn.database,
      '-e',
      'select database()',
    ]);
    expect(r).toMatchObject({ code: 0 });
    expect(r.stdout.trim()).toBe(conn.database);
  });

  it('psql reads from a replica with external_url_ro, and writes there are refused', async () => {
    const { id } = await provision({ name: 'local-pg-reads', replicas: 1 });
    const conn = await withReplicaPort(id);
    expect(conn.external_host_ro).toBe('127.0.0.1');
    expect(conn.external_url_ro).toBe(`postgresql://${conn.username}:${conn.password}@127.0.0.1:${conn.external_port_ro}/${conn.database}`);
    expect((await psql(conn.external_url, 'select pg_is_in_recovery()')).stdout.trim()).toBe('f');
    const ro = await until(
      () => psql(conn.external_url_ro, 'select pg_is_in_recovery()'),
      (r) => r.code === 0,
      60_000,
    );
    expect(ro.stdout.trim()).toBe('t');
    const write = await psql(conn.external_url_ro, 'create table t (v int)');
    expect(write.code).not.toBe(0);
    expect(write.stderr).toMatch(/read-only transaction/);
    // Withdrawn with external access: no port of the replica stays published.
    const off = await owner.request('PATCH', `${base}/${id}`, { external_access_enabled: false });
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    const closed = (await owner.get(`${base}/${id}/connection`)).body;
    expect(closed).toMatchObject({ external_host_ro: null, external_port_ro: null, external_url_ro: null });
    expect((await psql(conn.external_url_ro, 'select 1')).code).not.toBe(0);
  }, 300_000);

  it('mysql reads from a replica with external_host_ro and external_port_ro, read-only', async () => {
    const { id } = await provision({ name: 'local-my-reads', engine: 'mysql', replicas: 3 });
    const conn = await withReplicaPort(id);
    expect((await mysqlCli(conn.external_url, 'select @@read_only')).stdout.trim()).toBe('0');
    const ro = await until(
      () => mysqlCli(conn.external_url_ro, 'select @@read_only'),
      (r) => r.code === 0,
      60_000,
    );
    expect(ro.stdout.trim()).toBe('1');
    const write = await mysqlCli(conn.external_url_ro, 'create table t (v int)');
    expect(write.code).not.toBe(0);
    expect(write.stderr).toMatch(/read-only/);
  }, 300_000);
});
