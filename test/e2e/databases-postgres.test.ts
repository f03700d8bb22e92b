import os from 'node:os';
// A managed PostgreSQL on the docker adapter, driven through the gateway: provisioning
// rules, live status, connecting with the real psql (inside the VPC and from outside),
// the SQL console, schema inspector, slow queries, IP allowlist enforced by pg_hba.conf,
// PATCH, DELETE, and the outbox events of all of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { signIdentity, importIdentityKey } from '@pier/kit';
import { until } from '@pier/testing';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';
import {
  DATABASES_ENV,
  cleanupVpc,
  databaseContainers,
  databaseVolumes,
  inVpc,
  inspect,
  localAddress,
  psql,
  waitForGone,
  waitForStatus,
} from './databases-helpers.ts';

const DOMAIN = 'pg.test.example';
const ROW_CAP = 50;

let p: Platform;
let owner: Api;
let base: string;
let id: string;
let shortId: string;
let conn: Record<string, any>;

const one = () => `${base}/${id}`;
/**
 * psql to Pier's PostgreSQL listener through `via`, keeping the returned URL: hostaddr skips
 * DNS, and libpq still sends the URL's host name as TLS SNI, which the listener routes by.
 */
const external = (url: string, via: string, sql = 'select current_user', params = '') => psql(`${url}?hostaddr=${via}${params}`, sql);
const internal = (url: string, sql = 'select current_database()') =>
  inVpc(p.bootstrap.vpcId, 'pier/pg-managed:15', ['psql', '-X', '-tA', '-d', url, '-c', sql]);

beforeAll(async () => {
  p = await startPlatform({
    env: {
      databases: {
        ...DATABASES_ENV,
        PIER_POSTGRES_EXTERNAL_DOMAIN: DOMAIN,
        PIER_DATABASES_QUERY_ROW_CAP: String(ROW_CAP),
        PIER_DATABASES_QUERY_TIMEOUT_MS: '1500',
      },
    },
  });
  owner = p.api(p.bootstrap.token);
  base = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/databases`;
});

afterAll(async () => {
  await p?.stop();
  if (p) await cleanupVpc(p.bootstrap.vpcId);
});

describe('provisioning rules', () => {
  it.each([
    [{}, 'name'],
    [{ name: 'a-name-of-twenty-chr' }, 'name'],
    [{ name: 'Not_A_Label' }, 'name'],
    [{ name: 'x', engine: 'oracle' }, 'engine'],
    [{ name: 'x', instance_type: 'svc.huge' }, 'instance_type'],
    [{ name: 'x', engine: 'mysql', instance_type: 'svc.nano' }, 'instance_type'],
    [{ name: 'x', engine: 'mysql', replicas: 2 }, 'replicas'],
    [{ name: 'x', replicas: 6 }, 'replicas'],
    [{ name: 'x', storage_gb: 0 }, 'storage_gb'],
    [{ name: 'x', storage_gb: 2000 }, 'storage_gb'],
    [{ name: 'x', storage_gb: 1.5 }, 'storage_gb'],
    [{ name: 'x', postgres_version: '9.6' }, 'postgres_version'],
    [{ name: 'x', engine: 'mysql', mysql_version: '5.7' }, 'mysql_version'],
    [{ name: 'x', external_access_enabled: 'yes' }, 'external_access_enabled'],
  ])('rejects %j naming %s, writing nothing', async (body, field) => {
    const res = await owner.post(base, body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'invalid_request', field });
    expect(res.body.error).toContain(field);
  });

  it('refuses an unknown field, naming it (a misspelt option is not silently dropped)', async () => {
    const res = await owner.post(base, { name: 'x', replica: 1 });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
    expect(res.body.error).toContain('"replica"');
  });

  it('has written no database for any of them', async () => {
    const list = await owner.get(base);
    expect(list.body).toEqual({ items: [], next_cursor: null });
  });
});

describe('a PostgreSQL database', () => {
  it('is accepted as creating, then runs', async () => {
    const res = await owner.post(base, { name: 'orders', postgres_version: '15', external_access_enabled: true });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({
      name: 'orders',
      engine: 'postgresql',
      instance_type: 'svc.nano',
      status: 'creating',
      postgres_version: '15',
      mysql_version: null,
      replicas: 0,
      storage_gb: 10,
      external_access_enabled: true,
    });
    id = res.body.id;
    shortId = id.slice(0, 8);
    expect(res.body.short_id).toBe(shortId);

    const dup = await owner.post(base, { name: 'orders' });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('already_exists');

    const running = await waitForStatus(owner, one(), 'running');
    expect(running.status).toBe('running');
    const list = await owner.get(base);
    expect(list.body.items.map((d: { id: string; status: string }) => [d.id, d.status])).toEqual([[id, 'running']]);
  });

  it('returns connection details that the real psql can use, inside the VPC and outside', async () => {
    const res = await owner.get(`${one()}/connection`);
    expect(res.status).toBe(200);
    conn = res.body;
    const user = `app_${shortId}`;
    expect(conn).toMatchObject({
      host: `db-${shortId}-rw`,
      port: 5432,
      database: shortId,
      username: user,
      pooler_host: `db-${shortId}-pooler-rw`,
      // No replicas: read-only clients are sent where writes go (see databases' README).
      pooler_host_ro: `db-${shortId}-pooler-rw`,
      read_only_host: `db-${shortId}-rw`,
    });
    expect(conn.password).toMatch(/^[0-9a-f]{48}$/);
    expect(conn.database_url).toBe(`postgresql://${user}:${conn.password}@db-${shortId}-rw:5432/${shortId}`);
    expect(conn.external_host).toBe(`${shortId}.${DOMAIN}`);
    expect(conn.external_host_ro).toBe(`${shortId}-ro.${DOMAIN}`);
    expect(conn.external_url).toBe(`postgresql://${user}:${conn.password}@${shortId}.${DOMAIN}:${conn.external_port}/${shortId}`);

    for (const url of [
      conn.database_url,
      conn.read_only_url,
      conn.database_url.replace(conn.host, conn.pooler_host),
      conn.database_url.replace(conn.host, conn.pooler_host_ro),
    ]) {
      const r = await internal(url);
      expect(r, url).toMatchObject({ code: 0, stdout: `${shortId}\n` });
    }
    const r = await external(conn.external_url, '127.0.0.1');
    expect(r).toMatchObject({ code: 0, stdout: `${user}\n` });
    // Through the listener on the one port, encrypted end to end with the server's own key;
    // the server itself publishes no port.
    const tls = await external(conn.external_url, '127.0.0.1', 'select ssl from pg_stat_ssl where pid = pg_backend_pid()', '&sslmode=require');
    expect(tls).toMatchObject({ code: 0, stdout: 't\n' });
    expect((await inspect(`pier-db-${id}`)).HostConfig.PortBindings).toEqual({});
    // A client that will not use TLS is told how to connect.
    const plain = await external(conn.external_url, '127.0.0.1', 'select 1', '&sslmode=disable');
    expect(plain.code).not.toBe(0);
    expect(plain.stderr).toContain('connect with sslmode=require');
    // Another database's name in the domain, or none of ours, reaches nothing.
    const stranger = await external(conn.external_url.replace(`@${shortId}.`, '@0badc0de.'), '127.0.0.1');
    expect(stranger.code).not.toBe(0);
  });

  it('runs one statement in the SQL console, with types, a row cap and a timeout', async () => {
    const q = (sql: string) => owner.post(`${one()}/query`, { sql });
    const ddl = await q(
      `create table items (id bigserial primary key, sku varchar(20) not null unique, qty integer default 1, note text, created_at timestamptz not null default now())`,
    );
    expect(ddl).toMatchObject({ status: 200, body: { command: 'CREATE', columns: [], rows: [] } });
    expect((await q('create index items_qty on items (qty, note)')).status).toBe(200);
    const ins = await q(`insert into items (sku, qty, note) values ('a', 2, 'x'), ('b', 3, null)`);
    expect(ins.body).toMatchObject({ command: 'INSERT', row_count: 2 });

    const sel = await q('select id, sku, qty, note, qty * 1.5 as half, qty > 2 as big from items order by id');
    expect(sel.status).toBe(200);
    expect(sel.body.columns).toEqual([
      { name: 'id', type: 'bigint' },
      { name: 'sku', type: 'character varying(20)' },
      { name: 'qty', type: 'integer' },
      { name: 'note', type: 'text' },
      { name: 'half', type: 'numeric' },
      { name: 'big', type: 'boolean' },
    ]);
    expect(sel.body.rows).toEqual([
      [1, 'a', 2, 'x', '3.0', false],
      [2, 'b', 3, null, '4.5', true],
    ]);
    expect(sel.body).toMatchObject({ row_count: 2, truncated: false });

    const many = await q('select g from generate_series(1, 1000) g');
    expect(many.body).toMatchObject({ row_count: ROW_CAP, truncated: true });
    expect(many.body.rows).toHaveLength(ROW_CAP);

    const bad = await q('select * from no_such_table');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'sql_error', error: 'relation "no_such_table" does not exist', sqlstate: '42P01' });
    const two = await q('select 1; select 2');
    expect(two.status).toBe(400);
    expect(two.body.error).toContain('cannot insert multiple commands into a prepared statement');
    const slow = await q('select pg_sleep(5)');
    expect(slow.status).toBe(400);
    expect(slow.body.error).toBe('canceling statement due to statement timeout');
    // The console runs as the app user, not as a superuser.
    const who = await q('select current_user, usesuper from pg_user where usename = current_user');
    expect(who.body.rows).toEqual([[`app_${shortId}`, false]]);
    expect((await q('select pg_read_file($$pg_hba.conf$$)')).status).toBe(400);
    expect((await owner.post(`${one()}/query`, { sql: '  ' })).status).toBe(400);
  });

  it('gives every console call a clean session, whatever the last one left behind', async () => {
    const q = (sql: string) => owner.post(`${one()}/query`, { sql });
    // Connections are reused: neither settings, nor a role change, nor an open
    // transaction, nor a temporary table may reach the next call.
    for (let i = 0; i < 3; i++) {
      expect((await q('set search_path to nowhere')).status).toBe(200);
      expect((await q('show search_path')).body.rows).toEqual([['"$user", public']]);
      expect((await q('set role none')).status).toBe(200);
      expect((await q('select current_user')).body.rows).toEqual([[`app_${shortId}`]]);
      expect((await q('begin')).status).toBe(200);
      // Inside a transaction begun by an earlier call, a savepoint would be accepted.
      const savepoint = await q('savepoint s1');
      expect(savepoint.status).toBe(400);
      expect(savepoint.body.error).toContain('can only be used in transaction blocks');
      expect((await q('create temporary table scratch (x int)')).status).toBe(200);
      expect((await q('select count(*)::int from pg_class where relname = $$scratch$$ and relpersistence = $$t$$')).body.rows).toEqual([[0]]);
    }
  });

  it('inspects the schema: columns, primary key, indexes', async () => {
    const res = await owner.get(`${one()}/schema`);
    expect(res.status).toBe(200);
    expect(res.body.tables).toHaveLength(1);
    const t = res.body.tables[0];
    expect(t).toMatchObject({ schema: 'public', name: 'items', primary_key: ['id'] });
    expect(t.columns).toEqual([
      { name: 'id', type: 'bigint', nullable: false, default: "nextval('items_id_seq'::regclass)" },
      { name: 'sku', type: 'character varying(20)', nullable: false, default: null },
      { name: 'qty', type: 'integer', nullable: true, default: '1' },
      { name: 'note', type: 'text', nullable: true, default: null },
      { name: 'created_at', type: 'timestamp with time zone', nullable: false, default: 'now()' },
    ]);
    expect(t.indexes.map((i: Record<string, unknown>) => [i.name, i.columns, i.unique, i.primary])).toEqual([
      ['items_pkey', ['id'], true, true],
      ['items_qty', ['qty', 'note'], false, false],
      ['items_sku_key', ['sku'], true, false],
    ]);
  });

  it('lists slow queries by mean time, honouring limit, and resets them', async () => {
    await owner.post(`${one()}/query`, { sql: 'select pg_sleep(0.3)' });
    const res = await owner.get(`${one()}/slow-queries`);
    expect(res.status).toBe(200);
    expect(res.body.items[0]).toMatchObject({ query: 'select pg_sleep($1)', calls: 1 });
    expect(res.body.items[0].mean_time_ms).toBeGreaterThanOrEqual(290);
    const means = res.body.items.map((i: { mean_time_ms: number }) => i.mean_time_ms);
    expect(means).toEqual([...means].sort((a, b) => b - a));
    // The control plane's own catalog queries are not the customer's slow queries.
    expect(res.body.items.some((i: { query: string }) => i.query.includes('pg_stat_statements'))).toBe(false);
    expect((await owner.get(`${one()}/slow-queries?limit=1`)).body.items).toHaveLength(1);
    expect((await owner.get(`${one()}/slow-queries?limit=101`)).status).toBe(400);
    expect((await owner.get(`${one()}/slow-queries?limit=0`)).status).toBe(400);

    const reset = await owner.post(`${one()}/slow-queries/reset`);
    expect(reset.status).toBe(204);
    const after = await owner.get(`${one()}/slow-queries`);
    expect(after.body.items.some((i: { query: string }) => i.query.includes('pg_sleep'))).toBe(false);
  });

  it("enforces the IP allowlist on the client's own address: listed addresses in, others out, the VPC always in", async () => {
    const listed = localAddress();
    const rules = `${one()}/ip-allowlist`;
    expect((await owner.get(rules)).body).toEqual({ items: [], next_cursor: null });
    for (const cidr of ['10.0.0.300/32', 'not-an-ip', '10.0.0.0/33', '']) {
      const bad = await owner.post(rules, { cidr });
      expect(bad.status).toBe(400);
      expect(bad.body.field).toBe('cidr');
    }
    expect((await owner.post(rules, {})).status).toBe(400);

    // Empty allowlist: no restriction.
    expect((await external(conn.external_url, listed)).code).toBe(0);
    expect((await external(conn.external_url, '127.0.0.1')).code).toBe(0);

    const add = await owner.post(rules, { cidr: listed, description: 'office' });
    expect(add.status).toBe(201);
    expect(add.body).toMatchObject({ cidr: `${listed}/32`, description: 'office', database_id: id });
    const v6 = await owner.post(rules, { cidr: '2001:DB8::1/48', description: 'v6 office' });
    expect(v6.body.cidr).toBe('2001:db8::/48');
    expect((await owner.post(rules, { cidr: `${listed}/32` })).status).toBe(409);

    // The listener judges the client's own address: this machine's address is listed,
    // 127.0.0.1 is not (the listener closes the connection; the server never sees it).
    expect(await external(conn.external_url, listed)).toMatchObject({ code: 0 });
    const refused = await external(conn.external_url, '127.0.0.1');
    expect(refused.code).not.toBe(0);
    expect((await internal(conn.database_url)).code).toBe(0);
    // The console keeps working: the control plane has its own role.
    expect((await owner.post(`${one()}/query`, { sql: 'select 1' })).status).toBe(200);

    const list = await owner.get(rules);
    expect(list.body.items.map((r: { cidr: string }) => r.cidr)).toEqual([`${listed}/32`, '2001:db8::/48']);
    expect((await owner.delete(`${rules}/${add.body.id}`)).status).toBe(204);
    expect((await owner.delete(`${rules}/${add.body.id}`)).status).toBe(404);
    // Only the IPv6 rule is left: nobody on IPv4 outside the VPC is listed.
    expect((await external(conn.external_url, listed)).code).not.toBe(0);
    expect((await owner.delete(`${rules}/${v6.body.id}`)).status).toBe(204);
    expect((await external(conn.external_url, '127.0.0.1')).code).toBe(0);
  });

  it('renames, resizes (storage only grows) and toggles external access', async () => {
    expect((await owner.patch(one(), {})).status).toBe(400);
    expect((await owner.patch(one(), { name: 'Bad Name' })).body.field).toBe('name');
    expect((await owner.patch(one(), { storage_gb: 5 })).body.field).toBe('storage_gb');

    const renamed = await owner.patch(one(), { name: 'orders-v2', storage_gb: 20, instance_type: 'svc.micro' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: 'orders-v2', storage_gb: 20, instance_type: 'svc.micro', status: 'running' });
    const server = await inspect(`pier-db-${id}`);
    expect(server.HostConfig.Memory).toBe(512 * 1024 * 1024);
    expect(server.HostConfig.NanoCpus).toBe(0.5e9);
    // A type bigger than the host still runs: Docker refuses more CPUs than the host has.
    const big = await owner.patch(one(), { instance_type: 'svc.xlarge' });
    expect(big.status).toBe(200);
    const bigServer = await inspect(`pier-db-${id}`);
    expect(bigServer.HostConfig.Memory).toBe(8192 * 1024 * 1024);
    expect(bigServer.HostConfig.NanoCpus).toBe(Math.min(4, os.cpus().length) * 1e9);

    const off = await owner.patch(one(), { external_access_enabled: false });
    expect(off.body.external_access_enabled).toBe(false);
    await waitForStatus(owner, one(), 'running');
    const c = await owner.get(`${one()}/connection`);
    expect(c.body).toMatchObject({
      external_host: null,
      external_host_ro: null,
      external_url: null,
      external_url_ro: null,
      external_port: null,
      password: conn.password,
    });
    expect((await external(conn.external_url, '127.0.0.1')).code).not.toBe(0);
    expect((await internal(conn.database_url)).code).toBe(0);
    // The data survived the new container.
    expect((await owner.post(`${one()}/query`, { sql: 'select count(*)::int from items' })).body.rows).toEqual([[2]]);

    const on = await owner.patch(one(), { external_access_enabled: true });
    expect(on.status).toBe(200);
    await waitForStatus(owner, one(), 'running');
    const again = (await owner.get(`${one()}/connection`)).body;
    expect(again.external_host).toBe(`${shortId}.${DOMAIN}`);
    expect((await external(again.external_url, '127.0.0.1')).code).toBe(0);
  });

  it('sends external_url_ro to a replica through the listener, by its -ro name', async () => {
    const scaled = await owner.patch(`${one()}/replicas`, { replicas: 1 });
    expect(scaled.status, JSON.stringify(scaled.body)).toBe(202);
    const c = (await owner.get(`${one()}/connection`)).body;
    expect(c.external_url_ro).toBe(`postgresql://app_${shortId}:${c.password}@${shortId}-ro.${DOMAIN}:${c.external_port}/${shortId}`);
    expect(c.external_port_ro).toBe(c.external_port);
    // Once the replica is healthy the -ro name reaches it (the primary before that).
    const ro = await until(
      () => external(c.external_url_ro, '127.0.0.1', 'select pg_is_in_recovery()'),
      (r) => r.stdout.trim() === 't',
      120_000,
      1_000,
    );
    expect(ro.code).toBe(0);
    expect((await external(c.external_url, '127.0.0.1', 'select pg_is_in_recovery()')).stdout.trim()).toBe('f');
    expect((await owner.patch(`${one()}/replicas`, { replicas: 0 })).status).toBe(202);
  }, 240_000);

  it('answers 404 for unknown or malformed ids', async () => {
    for (const bad of ['nope', '00000000-0000-4000-8000-000000000000']) {
      const res = await owner.get(`${base}/${bad}`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'database not found', code: 'database_not_found' });
    }
  });

  it('counts the VPC usage for auth', async () => {
    const key = await importIdentityKey(p.keys.privateJwk);
    const token = await signIdentity(key, { kind: 'service', subject: 'auth' }, 60);
    const res = await p.apiAt(p.serviceUrls.databases!, { 'x-pier-identity': token }).get(`/internal/vpcs/${p.bootstrap.vpcId}/usage`);
    expect(res.body).toEqual({ count: 1 });
  });

  it('deletes: deleting, torn down, then gone', async () => {
    const res = await owner.delete(one());
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('deleting');
    await waitForGone(owner, one());
    expect((await owner.get(base)).body.items).toEqual([]);
    expect(await databaseContainers(p.bootstrap.vpcId)).toEqual([]);
    expect(await databaseVolumes(p.bootstrap.vpcId)).toEqual([]);
  });

  it('published every change through the outbox', async () => {
    const client = new pg.Client({ connectionString: p.database.urls.databases });
    await client.connect();
    try {
      const deadline = Date.now() + 10_000;
      let rows: { kind: string; status: string; published: boolean }[] = [];
      while (Date.now() < deadline) {
        ({ rows } = await client.query(
          `select kind, payload->'data'->>'status' as status, published_at is not null as published from databases.outbox where payload->>'resource_id' = $1 order by id`,
          [id],
        ));
        if (rows.length && rows.every((r) => r.published)) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      const kinds = rows.map((r) => `${r.kind}:${r.status}`);
      expect(kinds[0]).toBe('database.created:creating');
      expect(kinds).toContain('database.status_changed:running');
      expect(kinds).toContain('database.allowlist_rule_added:null');
      expect(kinds).toContain('database.updated:running');
      expect(kinds.slice(-3)).toEqual(['database.status_changed:deleting', 'database.status_changed:deleted', 'database.deleted:null']);
      expect(rows.every((r) => r.published)).toBe(true);
    } finally {
      await client.end();
    }
  });
});
