// The `mysql` engine on the docker adapter (MariaDB 10.11), through the gateway:
// provisioning, the real mysql client inside the VPC and outside, the console, schema,
// performance_schema slow queries, and the allowlist as host-restricted accounts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';
import { DATABASES_ENV, cleanupVpc, databaseContainers, inVpc, localAddress, mysqlCli, waitForGone, waitForStatus } from './databases-helpers.ts';

const DOMAIN = 'mysql.test.example';

let p: Platform;
let owner: Api;
let base: string;
let id: string;
let shortId: string;
let conn: Record<string, any>;

const one = () => `${base}/${id}`;
const q = (sql: string) => owner.post(`${one()}/query`, { sql });
const internal = (url: string, sql = 'select database()') => {
  const u = new URL(url);
  return inVpc(p.bootstrap.vpcId, 'pier/mariadb:10.11', [
    'mysql',
    `--host=${u.hostname}`,
    `--port=${u.port}`,
    `--user=${u.username}`,
    `--password=${u.password}`,
    '--batch',
    '--skip-column-names',
    u.pathname.slice(1),
    '-e',
    sql,
  ]);
};

beforeAll(async () => {
  p = await startPlatform({
    env: { databases: { ...DATABASES_ENV, PIER_MYSQL_EXTERNAL_DOMAIN: DOMAIN, PIER_DATABASES_QUERY_TIMEOUT_MS: '1500', PIER_DATABASES_QUERY_ROW_CAP: '100' } },
  });
  owner = p.api(p.bootstrap.token);
  base = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/databases`;
});

afterAll(async () => {
  await p?.stop();
  if (p) await cleanupVpc(p.bootstrap.vpcId);
});

describe('a mysql database (MariaDB on docker)', () => {
  it('defaults to svc.small and one instance, and runs', async () => {
    const res = await owner.post(base, { name: 'shop', engine: 'mysql', external_access_enabled: true });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({
      engine: 'mysql',
      instance_type: 'svc.small',
      replicas: 1,
      mysql_version: '10.11',
      postgres_version: null,
      status: 'creating',
    });
    id = res.body.id;
    shortId = id.slice(0, 8);
    await waitForStatus(owner, one(), 'running');
  });

  it('connects with the real mysql client inside the VPC and from outside', async () => {
    conn = (await owner.get(`${one()}/connection`)).body;
    const user = `app_${shortId}`;
    expect(conn).toMatchObject({ host: `db-${shortId}-rw`, port: 3306, database: shortId, username: user, read_only_host: `db-${shortId}-rw` });
    expect(conn).not.toHaveProperty('pooler_host');
    expect(conn.database_url).toBe(`mysql://${user}:${conn.password}@db-${shortId}-rw:3306/${shortId}`);
    expect(conn.external_url).toBe(`mysql://${user}:${conn.password}@${shortId}.${DOMAIN}:${conn.external_port}/${shortId}`);
    for (const url of [conn.database_url, conn.read_only_url]) {
      expect(await internal(url), url).toMatchObject({ code: 0, stdout: `${shortId}\n` });
    }
    expect(await mysqlCli(conn.external_url, 'select current_user()', '127.0.0.1')).toMatchObject({ code: 0 });
  });

  it('runs the console, with types and engine errors', async () => {
    expect(
      (
        await q(
          'create table orders (id int auto_increment primary key, ref varchar(12) not null, total decimal(10,2) default 0, note text null, key orders_ref (ref))',
        )
      ).status,
    ).toBe(200);
    const ins = await q("insert into orders (ref, total) values ('a', 1.50), ('b', 2)");
    expect(ins.body).toMatchObject({ command: 'INSERT', row_count: 2 });
    const sel = await q('select id, ref, total, note from orders order by id');
    expect(sel.body.columns).toEqual([
      { name: 'id', type: 'int' },
      { name: 'ref', type: 'varchar' },
      { name: 'total', type: 'decimal' },
      { name: 'note', type: 'text' },
    ]);
    expect(sel.body.rows).toEqual([
      [1, 'a', '1.50', null],
      [2, 'b', '2.00', null],
    ]);
    const bad = await q('select * from nope');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'sql_error', error: `Table '${shortId}.nope' doesn't exist` });
    expect((await q('select 1; select 2')).status).toBe(400);
    // Row cap: the rest of the result is not read (MariaDB's sequence engine makes rows).
    const many = await q('select seq from seq_1_to_5000');
    expect(many.body).toMatchObject({ row_count: 100, truncated: true });
    expect(many.body.rows[99]).toEqual([100]);
    // The statement timeout (max_statement_time) stops a long statement with the engine's error.
    const slow = await q('select count(*) from seq_1_to_100000000 a, seq_1_to_100000000 b');
    expect(slow.status).toBe(400);
    expect(slow.body.error).toContain('max_statement_time exceeded');
    // The console is still usable afterwards (a fresh connection per statement).
    expect((await q('select 1')).body.rows).toEqual([[1]]);
  });

  it('inspects the schema', async () => {
    const res = await owner.get(`${one()}/schema`);
    expect(res.status).toBe(200);
    expect(res.body.tables).toEqual([
      {
        schema: shortId,
        name: 'orders',
        primary_key: ['id'],
        columns: [
          { name: 'id', type: 'int(11)', nullable: false, default: null },
          { name: 'ref', type: 'varchar(12)', nullable: false, default: null },
          { name: 'total', type: 'decimal(10,2)', nullable: true, default: '0.00' },
          { name: 'note', type: 'text', nullable: true, default: null },
        ],
        indexes: [
          { name: 'orders_ref', columns: ['ref'], unique: false, primary: false, definition: 'CREATE INDEX `orders_ref` ON `orders` (`ref`)' },
          { name: 'PRIMARY', columns: ['id'], unique: true, primary: true, definition: 'PRIMARY KEY (`id`)' },
        ],
      },
    ]);
  });

  it('lists performance_schema digests by mean time and resets them', async () => {
    // The timed-out statement above would lead the list: start from a clean slate.
    expect((await owner.post(`${one()}/slow-queries/reset`)).status).toBe(204);
    await q('select sleep(0.3)');
    await q('select 1');
    const res = await owner.get(`${one()}/slow-queries?limit=5`);
    expect(res.status).toBe(200);
    expect(res.body.items.length).toBeLessThanOrEqual(5);
    expect(res.body.items[0]).toMatchObject({ query: 'SELECT `sleep` (?)', calls: 1 });
    expect(res.body.items[0].mean_time_ms).toBeGreaterThanOrEqual(290);
    const means = res.body.items.map((i: { mean_time_ms: number }) => i.mean_time_ms);
    expect(means).toEqual([...means].sort((a, b) => b - a));
    expect((await owner.get(`${one()}/slow-queries?limit=1`)).body.items).toHaveLength(1);
    expect((await owner.post(`${one()}/slow-queries/reset`)).status).toBe(204);
    const after = await owner.get(`${one()}/slow-queries`);
    expect(after.body.items.some((i: { query: string }) => i.query.includes('sleep'))).toBe(false);
  });

  it('enforces the allowlist with host-restricted accounts', async () => {
    const listed = localAddress();
    const rules = `${one()}/ip-allowlist`;
    const v6 = await owner.post(rules, { cidr: '2001:db8::/48' });
    expect(v6.status).toBe(400);
    expect(v6.body.error).toContain('IPv6');
    const add = await owner.post(rules, { cidr: `${listed}/32` });
    expect(add.status).toBe(201);
    expect(await mysqlCli(conn.external_url, 'select 1', listed)).toMatchObject({ code: 0 });
    const refused = await mysqlCli(conn.external_url, 'select 1', '127.0.0.1');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('account is locked');
    expect((await internal(conn.database_url)).code).toBe(0);
    expect((await q('select 1')).status).toBe(200);
    expect((await owner.delete(`${rules}/${add.body.id}`)).status).toBe(204);
    expect((await mysqlCli(conn.external_url, 'select 1', '127.0.0.1')).code).toBe(0);
  });

  it('deletes', async () => {
    expect((await owner.delete(one())).status).toBe(202);
    await waitForGone(owner, one());
    expect(await databaseContainers(p.bootstrap.vpcId)).toEqual([]);
  });
});
