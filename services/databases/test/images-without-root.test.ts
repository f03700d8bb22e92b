// Pier's database images started as their engine's user, never root, with every capability
// dropped and no privilege escalation: what a pod under Kubernetes' restricted Pod
// Security Standard (the VPC namespaces' level) gets. On docker the databases service
// starts them as root and they step down; this proves the same entrypoints and commands
// work without that step: the server starts from the template, takes new access rules,
// serves the app user, and backs up into its repository.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUN_LABELS, run, until } from '@pier/testing';
import { renderMysqlAccess, renderPgHba, type AccessPolicy } from '../src/domain/access.ts';

const shortId = 'abcd1234';
const password = randomBytes(12).toString('hex');
const policy = (engine: AccessPolicy['engine'], rules: string[]): AccessPolicy => ({
  engine,
  database: shortId,
  appUser: `app_${shortId}`,
  vpcNetworks: ['10.99.0.0/16'],
  controlPlane: [],
  hostAddresses: [],
  externalAccess: rules.length > 0,
  rules,
});
const pgAccess = (rules: string[]) => Buffer.from(renderPgHba(policy('postgresql', rules))).toString('base64');
const mysqlAccess = (rules: string[]) =>
  Buffer.from(renderMysqlAccess(policy('mysql', rules), { app: password, console: `${password}c`, replication: `${password}r` })).toString('base64');

interface Engine {
  image: string;
  user: string;
  dataDir: string;
  repository: string;
  env: string[];
  /** The app user's `select 1` over TCP inside the container. */
  selectOne: string[];
  access: (rules: string[]) => string;
  /** Where the access rules land in the volume, and a line they contain for 192.0.2.0/24. */
  accessFile: string;
  ruleLine: string;
}

const engines: Record<'postgresql' | 'mysql', Engine> = {
  postgresql: {
    image: 'pier/pg-managed:15',
    user: 'postgres',
    dataDir: '/var/lib/postgresql/data',
    repository: '/var/lib/pgbackrest',
    env: [`PIER_APP_USER=app_${shortId}`, `PIER_APP_PASSWORD=${password}`, `PIER_CONSOLE_PASSWORD=${password}c`, `PIER_HBA_B64=${pgAccess([])}`],
    selectOne: [
      'psql',
      '-X',
      '-tA',
      '-d',
      `postgresql://app_${shortId}:${password}@127.0.0.1:5432/${shortId}?sslmode=require`,
      '-c',
      'select ssl from pg_stat_ssl where pid = pg_backend_pid()',
    ],
    access: pgAccess,
    accessFile: '/var/lib/postgresql/data/pier/pg_hba.conf',
    ruleLine: 'host all all 192.0.2.0/24 scram-sha-256',
  },
  mysql: {
    image: 'pier/mariadb:10.11',
    user: 'mysql',
    dataDir: '/var/lib/mysql',
    repository: '/var/lib/pier-backups',
    env: [`PIER_ACCESS_B64=${mysqlAccess([])}`],
    selectOne: ['mariadb', '-h', '127.0.0.1', '-u', `app_${shortId}`, `-p${password}`, '-N', '-B', shortId, '-e', 'select 1'],
    access: mysqlAccess,
    accessFile: '/var/lib/mysql/pier-access.sql',
    ruleLine: "'app_abcd1234'@'192.0.2.0/255.255.255.0'",
  },
};

describe.each(Object.entries(engines))('%s without root', (_engine, e) => {
  const name = `pier-test-nonroot-${randomUUID().slice(0, 8)}`;
  const exec = (...cmd: string[]) => run('docker', ['exec', name, ...cmd]);

  beforeAll(async () => {
    const started = await run('docker', [
      'run',
      '-d',
      '--name',
      name,
      ...RUN_LABELS.flatMap((l) => ['--label', l]),
      '--user',
      e.user,
      '--cap-drop',
      'ALL',
      '--security-opt',
      'no-new-privileges',
      '--mount',
      `type=volume,source=${name}-data,target=${e.dataDir}`,
      '--mount',
      `type=volume,source=${name}-backups,target=${e.repository}`,
      ...[`PIER_DB_NAME=${shortId}`, 'PIER_BACKUP_REPO=volume', `PIER_BACKUP_PATH=${e.repository}`, ...e.env].flatMap((v) => ['-e', v]),
      e.image,
      e.image.startsWith('pier/pg') ? 'postgres' : 'mariadbd',
    ]);
    expect(started.code, started.stderr).toBe(0);
    const healthy = await until(
      () => exec('pier-health'),
      (r) => r.code === 0 || r.stdout.startsWith('failed'),
      60_000,
      250,
    );
    expect(healthy.code, `${healthy.stdout}${(await run('docker', ['logs', name])).stderr}`).toBe(0);
  }, 90_000);

  afterAll(async () => {
    await run('docker', ['rm', '-f', '-v', name]);
    await run('docker', ['volume', 'rm', '-f', `${name}-data`, `${name}-backups`]);
  });

  it('runs every process as the engine user, and serves the app user', async () => {
    const uids = await exec('sh', '-c', "cat /proc/[0-9]*/status 2>/dev/null | awk '/^Uid:/ { print $2 }' | sort -u");
    expect(uids.stdout).toBe((await exec('id', '-u', e.user)).stdout);
    const answer = await exec(...e.selectOne);
    // PostgreSQL: over TLS with the server's own key; MariaDB: plain 1.
    expect(answer, answer.stderr).toMatchObject({ code: 0, stdout: e.user === 'postgres' ? 't\n' : '1\n' });
  });

  it('takes new access rules', async () => {
    const applied = await exec('pier-access', e.access(['192.0.2.0/24']));
    expect(applied.code, applied.stderr).toBe(0);
    expect((await exec('cat', e.accessFile)).stdout).toContain(e.ruleLine);
    expect((await exec(...e.selectOne)).code).toBe(0);
  });

  it('backs up into its repository', async () => {
    expect((await exec('pier-backup', 'start', 'first', 'manual')).stdout).toBe('started\n');
    const states = await until(
      async () => JSON.parse((await exec('pier-backup', 'list')).stdout || '{"states":[]}').states as { status: string; error: string | null }[],
      (s) => s.some((x) => x.status !== 'running'),
      120_000,
      500,
    );
    expect(states, JSON.stringify(states)).toMatchObject([{ status: 'completed' }]);
  }, 150_000);
});
