// Read replicas on the docker adapter, for real: PostgreSQL hot standbys streaming from
// the primary over replication slots, MariaDB replicas following it by GTID; reached
// through read_only_url from inside the VPC's network, as the VPC's services would.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inVpc } from '@pier/testing';
import { docker, startDatabases, until, type Databases } from './support.ts';

let h: Databases;

const one = (id: string) => `${h.base}/${id}`;

async function provisioned(body: Record<string, unknown>): Promise<string> {
  const res = await h.post(h.base, body);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  const d = await until(
    () => h.get(one(res.body.id)).then((r) => r.body),
    (x) => x.status === 'running' || x.status === 'error',
    120_000,
  );
  expect(d, JSON.stringify(d)).toMatchObject({ status: 'running' });
  return res.body.id;
}

/** Replica containers of a database that report healthy (they follow the primary). */
async function healthyReplicas(id: string): Promise<string[]> {
  const list = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`pier.database=${id}`, 'pier.component=replica'] }) });
  return list.filter((c) => c.Status.includes('(healthy)')).map((c) => c.Names[0]!.slice(1));
}

const volumesOf = async (id: string) =>
  ((await docker.listVolumes({ filters: JSON.stringify({ label: [`pier.database=${id}`] }) })).Volumes ?? []).map((v) => v.Name).sort();

const psqlIn = (url: string, statement: string) => inVpc(h.vpcId, 'pier/pg-managed:15', ['psql', '-X', '-q', '-tA', '-d', url, '-c', statement]);
function mysqlIn(url: string, statement: string) {
  const u = new URL(url);
  const args = [
    'mariadb',
    '-h',
    u.hostname,
    '-u',
    decodeURIComponent(u.username),
    `-p${decodeURIComponent(u.password)}`,
    '-N',
    '-B',
    u.pathname.slice(1),
    '-e',
    statement,
  ];
  return inVpc(h.vpcId, 'pier/mariadb:10.11', args);
}

beforeAll(async () => {
  h = await startDatabases();
});

afterAll(async () => {
  await h?.stop();
});

describe('postgresql read replicas', () => {
  let id: string;
  let conn: Record<string, any>;

  it('validates the count against the documented bounds', async () => {
    id = await provisioned({ name: 'reads' });
    for (const replicas of [-1, 6, 1.5]) {
      const res = await h.request('PATCH', `${one(id)}/replicas`, { replicas });
      expect(res.status, String(replicas)).toBe(400);
      expect(res.body.field).toBe('replicas');
    }
    expect((await h.request('PATCH', `${one(id)}/replicas`, {})).body.field).toBe('replicas');
    // Without replicas, read-only clients are sent where writes go.
    conn = (await h.get(`${one(id)}/connection`)).body;
    expect(conn.read_only_host).toBe(conn.host);
    expect(conn.pooler_host_ro).toBe(conn.pooler_host);
  }, 180_000);

  it('two replicas serve reads through read_only_url, spread over both, and refuse writes', async () => {
    const res = await h.request('PATCH', `${one(id)}/replicas`, { replicas: 2 });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ replicas: 2, status: 'running' });
    await until(
      () => healthyReplicas(id),
      (l) => l.length === 2,
      120_000,
    );
    conn = (await h.get(`${one(id)}/connection`)).body;
    expect(conn.read_only_host).toBe(`db-${id.slice(0, 8)}-ro`);
    expect(conn.pooler_host_ro).toBe(`db-${id.slice(0, 8)}-pooler-ro`);
    expect((await psqlIn(conn.database_url, "create table t (v text); insert into t values ('from-primary')")).code).toBe(0);

    const read = await until(
      () => psqlIn(conn.read_only_url, 'select v from t'),
      (r) => r.code === 0 && r.stdout.trim() === 'from-primary',
      30_000,
    );
    expect(read.stdout.trim()).toBe('from-primary');
    const write = await psqlIn(conn.read_only_url, "insert into t values ('x')");
    expect(write.code).not.toBe(0);
    expect(write.stderr).toMatch(/read-only transaction/);
    // Docker's DNS gives every replica behind the read-only name: over a few connections, both answer.
    const servers = new Set<string>();
    for (let i = 0; i < 12 && servers.size < 2; i++) servers.add((await psqlIn(conn.read_only_url, 'select inet_server_addr()')).stdout.trim());
    expect(servers.size).toBe(2);
    // The read-only pooler reaches a replica too.
    const pooled = await psqlIn(conn.read_only_url.replace(conn.read_only_host, conn.pooler_host_ro), 'select pg_is_in_recovery()');
    expect(pooled.stdout.trim()).toBe('t');
    expect((await h.get(one(id))).body.status).toBe('running');
  }, 240_000);

  it('scaling down removes the replica, its volume and its replication slot', async () => {
    const res = await h.request('PATCH', `${one(id)}/replicas`, { replicas: 1 });
    expect(res.status).toBe(202);
    expect(await volumesOf(id)).toEqual([`pier-db-${id}`, `pier-db-${id}-replica-1`]);
    const slots = await psqlIn(conn.database_url, 'select slot_name from pg_replication_slots order by 1');
    expect(slots.stdout.trim()).toBe('replica_1');
    expect((await h.request('PATCH', `${one(id)}/replicas`, { replicas: 0 })).status).toBe(202);
    expect(await volumesOf(id)).toEqual([`pier-db-${id}`]);
    expect((await psqlIn(conn.database_url, 'select count(*) from pg_replication_slots')).stdout.trim()).toBe('0');
    expect((await h.get(`${one(id)}/connection`)).body.read_only_host).toBe(conn.host);
  }, 120_000);
});

describe('replicas asked for at provision', () => {
  it('start once the new primary runs, and follow it', async () => {
    const id = await provisioned({ name: 'born-with-one', replicas: 1 });
    await until(
      () => healthyReplicas(id),
      (l) => l.length === 1,
      120_000,
    );
    const conn = (await h.get(`${one(id)}/connection`)).body;
    expect((await psqlIn(conn.database_url, 'create table t (v int); insert into t values (7)')).code).toBe(0);
    const read = await until(
      () => psqlIn(conn.read_only_url, 'select v from t'),
      (r) => r.code === 0 && r.stdout.trim() === '7',
      30_000,
    );
    expect(read.stdout.trim()).toBe('7');
  }, 180_000);
});

describe('mysql replicas', () => {
  it('counts instances, odd only: 3 is a primary and two replicas following it, read-only', async () => {
    const id = await provisioned({ name: 'shop', engine: 'mysql' });
    const even = await h.request('PATCH', `${one(id)}/replicas`, { replicas: 2 });
    expect(even.status).toBe(400);
    expect(even.body).toMatchObject({ field: 'replicas' });
    expect(even.body.error).toMatch(/odd/);

    const res = await h.request('PATCH', `${one(id)}/replicas`, { replicas: 3 });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await until(
      () => healthyReplicas(id),
      (l) => l.length === 2,
      120_000,
    );
    const conn = (await h.get(`${one(id)}/connection`)).body;
    expect(conn.read_only_host).toBe(`db-${id.slice(0, 8)}-ro`);
    expect((await mysqlIn(conn.database_url, "create table t (v varchar(20)); insert into t values ('from-primary')")).code).toBe(0);
    const read = await until(
      () => mysqlIn(conn.read_only_url, 'select v from t'),
      (r) => r.code === 0 && r.stdout.trim() === 'from-primary',
      30_000,
    );
    expect(read.stdout.trim()).toBe('from-primary');
    const write = await mysqlIn(conn.read_only_url, "insert into t values ('x')");
    expect(write.code).not.toBe(0);
    expect(write.stderr).toMatch(/read-only/);

    expect((await h.request('PATCH', `${one(id)}/replicas`, { replicas: 1 })).status).toBe(202);
    expect(await volumesOf(id)).toEqual([`pier-db-${id}`]);
    expect((await h.get(`${one(id)}/connection`)).body.read_only_host).toBe(conn.host);
  }, 240_000);
});
