// The built `pier` CLI on real resources: services (create, env with a secret reference,
// deploy, rollback, restart, shell, update, delete, all with --wait) and databases (create,
// connect through the real psql and mysql, query, schema, backups, restore, fork,
// replicas, allowlist, external access).
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '@pier/testing';
import { DATABASES_ENV, cleanupVpc } from './databases-helpers.ts';
import { cleanVpcs, containersOf, inspect, TINY_HTTP } from './services-support.ts';
import { startCli, type CliHarness } from './cli-support.ts';

let cli: CliHarness;

beforeAll(async () => {
  cli = await startCli({ env: { databases: DATABASES_ENV } });
  expect((await cli.login()).code).toBe(0);
});
afterAll(async () => {
  await cli?.stop();
  if (cli) {
    await cleanVpcs(cli.platform.bootstrap.vpcId);
    await cleanupVpc(cli.platform.bootstrap.vpcId);
  }
});

describe('pier services', () => {
  it('creates and waits until running, with progress on stderr and the record on stdout', async () => {
    const r = await cli.pier(['--json', 'services', 'create', 'web', '--image', TINY_HTTP, '--port', '8080', '--health-check-path', '/', '--wait']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ name: 'web', status: 'running', image: TINY_HTTP });
    expect(r.stderr).toMatch(/service web: running \(\d+s\)/);
    const list = await cli.pier(['services', 'list']);
    expect(list.stdout).toMatch(/^NAME\s+TYPE\s+STATUS/m);
    expect(list.stdout).toMatch(/^web\s+web\s+running\s+svc\.nano\s+1\s+pier\/tiny-http:1\s/m);
  });

  it('creates an on_demand service and an autoscaled one, and shows their settings and replica counts', async () => {
    const sleepy = await cli.json(['services', 'create', 'sleepy', '--deployment-mode', 'on_demand', '--idle-timeout', '600']);
    expect(sleepy).toMatchObject({ deployment_mode: 'on_demand', min_replicas: 0, idle_timeout_seconds: 600, target_concurrency: 25 });
    const busy = await cli.json(['services', 'create', 'busy', '--max-replicas', '4', '--target-concurrency', '10']);
    expect(busy).toMatchObject({ deployment_mode: 'always_on', max_replicas: 4, target_concurrency: 10, idle_timeout_seconds: null });
    const shown = await cli.pier(['services', 'show', 'sleepy']);
    expect(shown.stdout).toMatch(/^replicas\s+0 ready of 0 \(0\)$/m);
    expect(shown.stdout).toMatch(/^idle timeout\s+600 s$/m);
    const refused = await cli.pier(['services', 'update', 'busy', '--idle-timeout', '60']);
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringContaining('idle_timeout_seconds') });
    for (const name of ['sleepy', 'busy']) expect((await cli.pier(['services', 'delete', name, '--yes'])).code).toBe(0);
  });

  it('sets literals and secret references in one rollout; the value reaches the container, never the output', async () => {
    expect((await cli.pier(['secrets', 'create', 'db-creds', 'password=pa55-w0rd'])).code).toBe(0);
    const set = await cli.pier(['services', 'env', 'set', 'web', 'GREETING=hello', '--secret', 'DB_PASSWORD=db-creds:password', '--wait']);
    expect(set.code).toBe(0);
    expect(set.stdout).toContain('2 variable(s) set; rolling out');
    const list = await cli.pier(['services', 'env', 'list', 'web']);
    expect(list.stdout).toMatch(/^GREETING\s+hello$/m);
    expect(list.stdout).toMatch(/^DB_PASSWORD\s+\(secret db-creds:password\)$/m);
    expect(list.stdout).not.toContain('pa55-w0rd');
    const web = await cli.json(['services', 'show', 'web']);
    const [container] = await containersOf(web.id);
    expect((await inspect(container!)).Config.Env).toEqual(expect.arrayContaining(['GREETING=hello', 'DB_PASSWORD=pa55-w0rd']));

    expect((await cli.pier(['services', 'env', 'unset', 'web', 'GREETING', '--wait'])).code).toBe(0);
    expect((await cli.json(['services', 'env', 'list', 'web'])).map((e: { key: string }) => e.key)).toEqual(['DB_PASSWORD']);
    expect(await cli.pier(['services', 'env', 'unset', 'web', 'NOPE'])).toMatchObject({ code: 1, stderr: expect.stringContaining('(env_var_not_found)') });
    expect(await cli.pier(['services', 'env', 'set', 'web', '--secret', 'X=nosuch:key'])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('(secret_not_found)'),
    });
  });

  it('deploys, rolls back and restarts with --wait, each a deployment in the history', async () => {
    const deploy = await cli.json(['services', 'deploy', 'web', TINY_HTTP, '--wait']);
    expect(deploy).toMatchObject({ deployment: { reason: 'deploy' }, service: { status: 'running' } });
    const history = await cli.json(['services', 'deployments', 'web']);
    const first = history[history.length - 1];
    expect(first.reason).toBe('create');
    const rollback = await cli.pier(['services', 'rollback', 'web', first.id, '--wait']);
    expect(rollback).toMatchObject({ code: 0, stdout: expect.stringMatching(/^rollback of web: deployment \S+ \(pier\/tiny-http:1\), service running$/m) });
    expect((await cli.pier(['services', 'restart', 'web', '--wait'])).code).toBe(0);
    const reasons = (await cli.json(['services', 'deployments', 'web'])).map((d: { reason: string }) => d.reason);
    expect(reasons.slice(0, 3)).toEqual(['restart', 'rollback', 'deploy']);
    const table = await cli.pier(['services', 'deployments', 'web']);
    expect(table.stdout).toMatch(/rollback of [0-9a-f]{8}/);
  });

  it('runs a command in a replica with the shell, piping stdin, exiting with its status', async () => {
    const r = await cli.pier(['services', 'shell', 'web', '--', 'sh', '-c', 'echo in the container as $(id -u); exit 4']);
    expect(r).toMatchObject({ code: 4, stdout: 'in the container as 1000\n' });
    const piped = await cli.pier(['services', 'shell', 'web', '--', 'wc', '-l'], { input: 'one\ntwo\nthree\n' });
    expect(piped.code).toBe(0);
    expect(piped.stdout.trim()).toBe('3');
    const refused = await cli.pier(['services', 'shell', 'web', '--replica', '9', '--', 'true']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('(replica_not_found)');
  });

  it('on a terminal (a real pseudo-terminal, from script(1)) the shell is raw, sized and interactive', async () => {
    // script gives the CLI a terminal of unknown size: the CLI then asks for 80x24.
    const line = `${process.execPath} ${cli.bin} services shell web`;
    const r = await new Promise<{ code: number | null; out: string }>((resolve, reject) => {
      const child = spawn('script', ['-qefc', line, '/dev/null'], { env: { ...process.env, PIER_CONFIG_DIR: cli.dir } });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, out }));
      child.stdin.write('stty size; echo "tty: $(tty)"; exit 5\n');
    });
    expect(r.out).toContain('24 80');
    expect(r.out).toMatch(/tty: \/dev\/pts\/\d+/);
    expect(r.code).toBe(5);
  });

  it('updates the configuration, waits for a crash with exit 1, and deletes with --yes --wait', async () => {
    const updated = await cli.json(['services', 'update', 'web', '--instance-type', 'svc.micro', '--wait']);
    expect(updated).toMatchObject({ instance_type: 'svc.micro', status: 'running' });
    const crashy = await cli.pier(['services', 'create', 'crashy', '--image', 'pier/exits:1', '--wait', '--timeout', '60']);
    expect(crashy.code).toBe(1);
    expect(crashy.stderr).toContain('service crashy is crashed');
    expect(crashy.stderr).toContain('(ended_crashed)');
    const gone = await cli.pier(['services', 'delete', 'crashy', '--yes', '--wait']);
    expect(gone).toMatchObject({ code: 0, stdout: 'Service crashy deleted.\n' });
    expect((await cli.pier(['services', 'show', 'crashy'])).code).toBe(1);
  });
});

describe('pier db', () => {
  it('creates a postgresql database, connects with psql from this machine, queries and reads the schema', async () => {
    const created = await cli.pier(['db', 'create', 'orders', '--external-access', '--wait']);
    expect(created).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Database orders \(\S+, postgresql 15\): running$/m) });
    const psql = await cli.pier([
      'db',
      'connect',
      'orders',
      '--',
      '-X',
      '-q',
      '-tA',
      '-c',
      "create table t (id int primary key, v text); insert into t values (1, 'a'); select v from t",
    ]);
    expect(psql).toMatchObject({ code: 0, stdout: 'a\n' });
    const failing = await cli.pier(['db', 'connect', 'orders', '--', '-X', '-c', 'select * from nowhere']);
    expect(failing.code).not.toBe(0); // psql's own exit status comes through

    const query = await cli.pier(['db', 'query', 'orders', 'select id, v from t']);
    expect(query.stdout).toBe('id  v\n1   a\nSELECT 1\n');
    const schema = await cli.pier(['db', 'schema', 'orders']);
    expect(schema.stdout).toContain('public.t  (primary key: id)');
    expect(schema.stdout).toMatch(/^ {2}id\s+integer not null$/m);

    const connection = await cli.pier(['db', 'connection', 'orders']);
    const details = await cli.json(['db', 'connection', 'orders']);
    expect(connection.stdout).not.toContain(details.password);
    expect(connection.stdout).toMatch(/^external url\s+postgresql:\/\/\S+:\*\*\*\*@127\.0\.0\.1:\d+\//m);
  });

  it('backs up, restores and forks with --wait (retrying while a first backup is taken), sets the schedule and replicas', async () => {
    // No scheduled run while the backups are counted below.
    expect((await cli.pier(['db', 'backups', 'schedule', 'orders', '--disable'])).code).toBe(0);
    const restored = await cli.pier(['db', 'restore', 'orders', 'orders-copy', '--wait']);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stderr).toMatch(/has no completed backup yet: backup \S+ was started: waiting/);
    expect(restored.stdout).toMatch(/^Database orders-copy \(\S+\), restored from orders: running$/m);
    expect((await cli.pier(['db', 'show', 'orders-copy'])).stdout).toMatch(/^made from\s+restore of \S+, backup \d{8}-\d{6}$/m);

    const taken = await cli.json(['db', 'backups', 'create', 'orders', '--wait']);
    expect(taken).toMatchObject({ status: 'completed', method: 'manual' });
    const list = await cli.pier(['db', 'backups', 'list', 'orders']);
    expect(list.stdout).toMatch(/^NAME\s+STATUS\s+METHOD\s+SIZE\s+STARTED\s+COMPLETED$/m);
    expect(list.stdout).toMatch(new RegExp(`^${taken.name}\\s+completed\\s+manual\\s+\\d`, 'm'));
    expect(list.stdout).toMatch(/\s+completed\s+triggered\s+/);
    expect(list.stdout).toMatch(/^Point-in-time recovery: any time from \S+ to \S+$/m);
    const json = await cli.json(['db', 'backups', 'list', 'orders']);
    expect(json.items).toHaveLength(2);
    expect(json.recovery_window).toEqual({ earliest: expect.any(String), latest: expect.any(String) });

    const fork = await cli.pier(['db', 'fork', 'orders', 'orders-fork', '--wait']);
    expect(fork).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Database orders-fork \(\S+\), forked from orders: running$/m) });
    const pitr = await cli.pier(['db', 'restore', 'orders', 'orders-then', '--time', '2001-01-01T00:00:00Z']);
    expect(pitr).toMatchObject({ code: 1, stderr: expect.stringContaining('field target_time') });

    const schedule = await cli.json(['db', 'backups', 'schedule', 'orders', '--cron', '30 2 * * *', '--retention', '3']);
    expect(schedule).toMatchObject({ schedule: '30 2 * * *', retention_count: 3, enabled: false });
    expect((await cli.json(['db', 'backups', 'schedule', 'orders', '--enable'])).next_run_at).toMatch(/T02:30:00/);
    expect((await cli.pier(['db', 'backups', 'schedule', 'orders'])).stdout).toMatch(/^keeps\s+3 scheduled backups$/m);
    expect(await cli.pier(['db', 'backups', 'schedule', 'orders', '--cron', 'daily'])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('field schedule'),
    });

    expect((await cli.pier(['db', 'replicas', 'orders', '1'])).stdout).toMatch(/^Database orders: 1 replica \(running\)/);
    // --read-only reaches the replica, on the port it publishes of its own once it runs.
    const readOnly = await until(
      () => cli.pier(['db', 'connect', 'orders', '--read-only', '--', '-X', '-tA', '-c', 'select pg_is_in_recovery()']),
      (r) => r.stdout === 't\n',
      60_000,
      1_000,
    );
    expect(readOnly.code).toBe(0);
    expect(await cli.pier(['db', 'replicas', 'orders', '9'])).toMatchObject({ code: 1, stderr: expect.stringContaining('field replicas') });
    expect((await cli.pier(['db', 'replicas', 'orders', '0'])).code).toBe(0);

    const triggered = json.items.find((b: { method: string }) => b.method === 'triggered').name;
    expect(await cli.pier(['db', 'backups', 'delete', 'orders', triggered])).toMatchObject({ code: 2, stderr: expect.stringContaining('--yes') });
    expect((await cli.pier(['db', 'backups', 'delete', 'orders', triggered, '--yes'])).stdout).toBe(`Deleted backup ${triggered}.\n`);
    // Three databases made from backups and two backups taken, one after another: about 25 s
    // alone, and it passed 60 s once with the whole suite sharing the machine's two cores.
  }, 180_000);

  it('manages the allowlist and external access; connect says what to do when it is off', async () => {
    const added = await cli.json(['db', 'allowlist', 'add', 'orders', '203.0.113.0/24', '--description', 'office']);
    expect(added).toMatchObject({ cidr: '203.0.113.0/24', description: 'office' });
    expect((await cli.pier(['db', 'allowlist', 'list', 'orders'])).stdout).toMatch(/^203\.0\.113\.0\/24\s+office\s/m);
    expect((await cli.pier(['db', 'allowlist', 'remove', 'orders', '203.0.113.0/24'])).code).toBe(0);
    expect((await cli.pier(['db', 'allowlist', 'list', 'orders'])).stdout).toContain('no rules');

    expect((await cli.json(['db', 'update', 'orders', '--no-external-access', '--wait'])).external_access_enabled).toBe(false);
    const refused = await cli.pier(['db', 'connect', 'orders']);
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringContaining('pier db update orders --external-access') });
    expect((await cli.pier(['db', 'delete', 'orders', '--yes', '--wait'])).code).toBe(0);
    expect((await cli.json(['db', 'list'])).map((d: { name: string }) => d.name)).not.toContain('orders');
  });

  it('connects to a mysql database with the real mysql client', async () => {
    expect((await cli.pier(['db', 'create', 'shop', '--engine', 'mysql', '--external-access', '--wait'])).code).toBe(0);
    const r = await cli.pier(['db', 'connect', 'shop', '--', '--batch', '--skip-column-names', '-e', 'select database() = left(database(), 8)']);
    expect(r).toMatchObject({ code: 0, stdout: '1\n' });
    expect(await cli.pier(['db', 'create', 'tiny', '--engine', 'mysql', '--instance-type', 'svc.nano'])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('field instance_type'),
    });
  });
});
