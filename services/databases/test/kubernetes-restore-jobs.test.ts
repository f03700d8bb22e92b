// The scripts of the kubernetes adapter's restore Jobs, run for real: the Job that renames a
// restored CloudNativePG database (psql, against the suite's PostgreSQL, with the roles
// CloudNativePG's managed roles would give it) and the one that moves a restored MOCO
// schema's tables (the mysql client, against a MariaDB server from the local
// pier/mariadb:10.11 image; MOCO runs MySQL 8, which takes the same statements). Each is
// run twice: a retried Job must finish the work, not fail on what it already did.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import type Docker from 'dockerode';
import { adminQuery, docker, infra, restrictedViolations, run, testLabels } from '@pier/testing';
import { cnpgRestoreJob, mocoRestoreJob, type Restored } from '../src/cluster/kubernetes-restore.ts';
import type { KubernetesSettings, Manifest } from '../src/cluster/kubernetes-meta.ts';
import { clusterDatabase } from './kubernetes-support.ts';

const SETTINGS: KubernetesSettings = {
  clusterNetworks: ['10.0.0.0/8'],
  postgresImage: (v) => `postgres:${v}`,
  mysqlImage: (v) => `mysql:${v}`,
};

function restored(engine: 'postgresql' | 'mysql'): Restored {
  const db = clusterDatabase({ engine });
  const source = { id: randomUUID(), shortId: randomBytes(4).toString('hex'), vpcId: db.vpcId, engine };
  return { ...db, restore: { source, backupName: '20261125-060000', backupRef: '2026-11-25T06:01:30.000Z', targetTime: null } };
}

/** The Job's container: its script and its environment, literal values and Secret values given. */
function jobOf(manifest: Manifest, secrets: Record<string, string>) {
  // Its pod runs in a VPC namespace, which admits only pods meeting the `restricted` standard.
  expect(restrictedViolations((manifest.spec as any).template.spec)).toEqual([]);
  const c = (manifest.spec as any).template.spec.containers[0];
  const env = Object.fromEntries(
    (c.env as { name: string; value?: string; valueFrom?: unknown }[]).map((e) => [e.name, e.value ?? secrets[e.name] ?? '']),
  ) as Record<string, string>;
  return { script: c.command[2] as string, env };
}

describe('the rename Job of a restored CloudNativePG database', () => {
  const admin = infra().postgresAdminUrl;
  const url = new URL(admin);
  const db = restored('postgresql');
  const from = db.restore.source.shortId;
  const to = db.shortId;
  const appUrl = (user: string, password: string, database: string) => `postgresql://${user}:${password}@${url.hostname}:${url.port}/${database}`;

  async function asUser<T = any>(conn: string, sql: string): Promise<T[]> {
    const client = new pg.Client({ connectionString: conn });
    await client.connect();
    try {
      return (await client.query(sql)).rows as T[];
    } finally {
      await client.end();
    }
  }

  afterAll(async () => {
    for (const d of [from, to]) await adminQuery(admin, `DROP DATABASE IF EXISTS "${d}" WITH (FORCE)`);
    for (const r of [`app_${from}`, `app_${to}`]) await adminQuery(admin, `DROP ROLE IF EXISTS "${r}"`);
  });

  it('makes the restored database and its objects the new app role’s, twice over', async () => {
    // What the source's backup holds: its database, owned by its app role, with data in it.
    await adminQuery(admin, `CREATE ROLE "app_${from}" LOGIN PASSWORD 'source-password'`);
    await adminQuery(admin, `CREATE DATABASE "${from}" OWNER "app_${from}"`);
    await asUser(
      appUrl(`app_${from}`, 'source-password', from),
      `CREATE TABLE items (id serial PRIMARY KEY, name text); INSERT INTO items (name) VALUES ('kept'); CREATE VIEW names AS SELECT name FROM items`,
    );
    // What the new Cluster's managed roles make: the new app role, and the source's owner
    // with CREATEDB, membership in the new role and a password of the new database's own.
    await adminQuery(admin, `CREATE ROLE "app_${to}" LOGIN PASSWORD 'new-password'`);
    await adminQuery(admin, `ALTER ROLE "app_${from}" LOGIN CREATEDB PASSWORD 'restore-password'`);
    await adminQuery(admin, `GRANT "app_${to}" TO "app_${from}"`);

    const { script, env } = jobOf(cnpgRestoreJob(db, SETTINGS), { PGPASSWORD: 'restore-password' });
    expect(env).toMatchObject({ PGUSER: `app_${from}`, PGHOST: `db-${to}-rw` });
    for (let i = 0; i < 2; i++) {
      const res = await run('sh', ['-c', script], { ...env, PGHOST: url.hostname, PGPORT: url.port });
      expect(res, res.stderr).toMatchObject({ code: 0 });
    }

    const dbs = await adminQuery(admin, `SELECT datname, pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname IN ('${from}', '${to}')`);
    expect(dbs).toEqual([{ datname: to, owner: `app_${to}` }]);
    const newApp = appUrl(`app_${to}`, 'new-password', to);
    expect(await asUser(newApp, `SELECT name FROM names`)).toEqual([{ name: 'kept' }]);
    await asUser(newApp, `INSERT INTO items (name) VALUES ('new'); ALTER TABLE items ADD COLUMN note text`);
    const owners = await asUser(
      newApp,
      `SELECT c.relname, pg_get_userbyid(c.relowner) AS owner FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v', 'S') ORDER BY 1`,
    );
    expect(owners).toEqual([
      { relname: 'items', owner: `app_${to}` },
      { relname: 'items_id_seq', owner: `app_${to}` },
      { relname: 'names', owner: `app_${to}` },
    ]);
    // The source's password no longer opens it.
    await expect(asUser(appUrl(`app_${from}`, 'source-password', 'postgres'), 'SELECT 1')).rejects.toThrow(/password authentication failed/);
  });
});

describe('the Job that moves a restored MOCO schema’s tables', () => {
  let server: Docker.Container;
  let port: number;
  const writable = randomBytes(12).toString('hex');
  const root = async (sql: string) => {
    const res = await run('mysql', [
      '--host=127.0.0.1',
      `--port=${port}`,
      '--user=moco-writable',
      `--password=${writable}`,
      '--batch',
      '--skip-column-names',
      '-e',
      sql,
    ]);
    if (res.code !== 0) throw new Error(res.stderr);
    return res.stdout.trim();
  };

  beforeAll(async () => {
    // A plain MariaDB server from the local image (its own entrypoint passes other commands through).
    const boot = [
      'set -e',
      'mariadb-install-db --user=mysql --datadir=/tmp/data --skip-test-db >/dev/null',
      'mariadbd --user=mysql --datadir=/tmp/data --port=3306 --bind-address=0.0.0.0 --skip-name-resolve &',
      'until mariadb-admin --protocol=socket -uroot ping >/dev/null 2>&1; do sleep 0.1; done',
      `mariadb -uroot -e "CREATE USER 'moco-writable'@'%' IDENTIFIED BY '${writable}'; GRANT ALL PRIVILEGES ON *.* TO 'moco-writable'@'%' WITH GRANT OPTION"`,
      'touch /tmp/ready',
      'wait',
    ].join('\n');
    server = await docker.createContainer({
      Image: 'pier/mariadb:10.11',
      Cmd: ['bash', '-c', boot],
      Labels: testLabels(),
      ExposedPorts: { '3306/tcp': {} },
      HostConfig: { PortBindings: { '3306/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] } },
    });
    await server.start();
    port = Number((await server.inspect()).NetworkSettings.Ports['3306/tcp']![0]!.HostPort);
    for (let i = 0; ; i++) {
      try {
        await root('SELECT 1');
        break;
      } catch (err) {
        if (i > 300) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  });
  afterAll(async () => {
    await server?.remove({ force: true, v: true }).catch(() => undefined);
  });

  async function restoreOf(withView: boolean): Promise<{ db: Restored; from: string; to: string }> {
    const db = restored('mysql');
    const from = db.restore.source.shortId;
    // What MOCO loads from the source's dump: its schema, its app user, their data.
    await root(
      [
        `CREATE DATABASE \`${from}\``,
        `CREATE USER 'app_${from}'@'%' IDENTIFIED BY 'source-password'`,
        `GRANT ALL PRIVILEGES ON \`${from}\`.* TO 'app_${from}'@'%'`,
        `CREATE TABLE \`${from}\`.items (id INT PRIMARY KEY, name TEXT) ENGINE=InnoDB`,
        `CREATE TABLE \`${from}\`.\`odd name\` (item INT, FOREIGN KEY (item) REFERENCES \`${from}\`.items (id)) ENGINE=InnoDB`,
        `INSERT INTO \`${from}\`.items VALUES (1, 'kept')`,
        `INSERT INTO \`${from}\`.\`odd name\` VALUES (1)`,
        ...(withView ? [`CREATE VIEW \`${from}\`.names AS SELECT name FROM \`${from}\`.items`] : []),
      ].join(';'),
    );
    return { db, from, to: db.shortId };
  }

  async function runJob(db: Restored): Promise<void> {
    const { script, env } = jobOf(mocoRestoreJob(db, SETTINGS), { WRITABLE_PASSWORD: writable });
    expect(script).toContain(`-h moco-db-${db.shortId}-primary `);
    const here = script.replace(`-h moco-db-${db.shortId}-primary `, `-h 127.0.0.1 -P ${port} `);
    for (let i = 0; i < 2; i++) {
      const res = await run('sh', ['-c', here], env);
      expect(res, res.stderr).toMatchObject({ code: 0 });
    }
  }

  it('moves the tables (keys and odd names included), drops the source’s user and its emptied schema', async () => {
    const { db, from, to } = await restoreOf(false);
    await runJob(db);
    expect(await root(`SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '${to}' ORDER BY 1`)).toBe('items\nodd name');
    expect(await root(`SELECT COUNT(*) FROM \`${to}\`.\`odd name\` JOIN \`${to}\`.items ON items.id = item`)).toBe('1');
    expect(
      await root(`SELECT REFERENCED_TABLE_SCHEMA FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_NAME = 'odd name' AND REFERENCED_TABLE_NAME IS NOT NULL`),
    ).toBe(to);
    expect(await root(`SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '${from}'`)).toBe('0');
    expect(await root(`SELECT COUNT(*) FROM mysql.user WHERE User = 'app_${from}'`)).toBe('0');
  });

  it('keeps the source’s schema while what it cannot move (a view) is left in it', async () => {
    const { db, from, to } = await restoreOf(true);
    await runJob(db);
    expect(await root(`SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '${to}'`)).toBe('2');
    expect(await root(`SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '${from}'`)).toBe('names');
  });
});
