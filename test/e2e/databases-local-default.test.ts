// The connection details on the local default (no external domain configured), used as
// they stand from this machine: `psql "$external_url"` and `mysql` with external_host and
// external_port, with no host override and no DNS of ours.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';
import { DATABASES_ENV, cleanupVpc, psql, run, waitForStatus } from './databases-helpers.ts';

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
  return conn.body;
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
});
