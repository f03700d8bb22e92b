// Tenant isolation of the docker adapter, for real: the SQL console runs as the
// database's own account with nothing to reset to, and a database's container sees its
// own backups and no other database's.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, testLabels, TEST_BACKUP_VOLUME } from '@pier/testing';
import { databaseChecks, docker, startDatabases, testDockerCluster, type Databases } from './support.ts';

let h: Databases;
let alpha: { id: string; shortId: string };
let beta: { id: string; shortId: string };
let checks: ReturnType<typeof databaseChecks>;

const query = (id: string, sql: string) => h.post(`${h.base}/${id}/query`, { sql });

/** A statement's error message (the console answers 400 sql_error). */
async function raised(id: string, sql: string): Promise<string> {
  const r = await query(id, sql);
  expect(r.status, JSON.stringify(r.body)).toBe(400);
  return r.body.error as string;
}

/** Runs a shell command in a database's server container as the user its server runs as. */
async function inServer(id: string, user: string, script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return run('docker', ['exec', '-u', user, `pier-db-${id}`, 'bash', '-c', script]);
}

beforeAll(async () => {
  h = await startDatabases({ PIER_DATABASES_BACKUP_SCHEDULER_INTERVAL_MS: '500' });
  checks = databaseChecks(h);
  const a = await h.post(h.base, { name: 'alpha' });
  const b = await h.post(h.base, { name: 'beta' });
  expect(a.status).toBe(202);
  expect(b.status).toBe(202);
  alpha = { id: a.body.id, shortId: a.body.short_id };
  beta = { id: b.body.id, shortId: b.body.short_id };
  await checks.running(alpha.id);
  await checks.running(beta.id);
}, 240_000);

afterAll(async () => {
  await h?.stop();
});

describe('the postgresql SQL console', () => {
  it('logs in as the database’s own account: session and current user are both it', async () => {
    const who = await query(alpha.id, 'select current_user, session_user');
    expect(who.status).toBe(200);
    expect(who.body.rows).toEqual([[`app_${alpha.shortId}`, `app_${alpha.shortId}`]]);
  });

  it('has no other role to fall back to: RESET ROLE, SET ROLE NONE, SET SESSION AUTHORIZATION', async () => {
    const app = `app_${alpha.shortId}`;
    for (const reset of ['RESET ROLE', 'SET ROLE NONE', 'SET SESSION AUTHORIZATION DEFAULT']) {
      const said = await raised(alpha.id, `DO $$ BEGIN ${reset}; RAISE EXCEPTION 'as % of %', current_user, session_user; END $$`);
      expect(said, reset).toBe(`as ${app} of ${app}`);
    }
    // A function changing the role setting inside the statement itself.
    const fn = await query(alpha.id, `select set_config('role', 'none', false) as r, current_setting('is_superuser') as su`);
    expect(fn.status).toBe(200);
    expect((await query(alpha.id, 'select session_user')).body.rows).toEqual([[app]]);
  });

  it('refuses privileged functions, however the role was reset', async () => {
    expect(await raised(alpha.id, 'select pg_switch_wal()')).toMatch(/permission denied for function pg_switch_wal/);
    for (const reset of ['RESET ROLE', 'SET ROLE NONE', 'SET SESSION AUTHORIZATION DEFAULT']) {
      const said = await raised(alpha.id, `DO $$ BEGIN ${reset}; PERFORM pg_switch_wal(); RAISE EXCEPTION 'switched'; END $$`);
      expect(said, reset).toMatch(/permission denied for function pg_switch_wal/);
    }
    // pg_read_all_stats was the console login's: other sessions' statements stay hidden.
    const stats = await raised(alpha.id, `DO $$ BEGIN SET ROLE NONE; RAISE EXCEPTION 'reads all stats: %', pg_has_role('pg_read_all_stats', 'member'); END $$`);
    expect(stats).toBe('reads all stats: f');
  });

  it('closes its connections without disturbing the server', async () => {
    // A session left in a transaction is closed rather than pooled, a statement past its
    // timeout is cancelled: their relays into the container end with them.
    for (let i = 0; i < 3; i++) {
      const begun = await query(alpha.id, 'begin');
      expect(begun.status, JSON.stringify(begun.body)).toBe(200);
    }
    expect(await raised(alpha.id, 'select pg_sleep(30)')).toMatch(/statement timeout/);
    await new Promise((r) => setTimeout(r, 1000));
    // The server never saw a child of its own die: no crash recovery, every session kept.
    const log = await run('docker', ['logs', `pier-db-${alpha.id}`]);
    expect(log.stderr).not.toMatch(/terminated by signal|all server processes terminated/);
    expect((await query(alpha.id, 'select 1')).status).toBe(200);
    // Pooled connections keep their relays (two cats each); closed ones leave none.
    const relays = await inServer(alpha.id, 'root', `for f in /proc/[0-9]*/exe; do readlink "$f"; done 2>/dev/null | grep -c '/cat$' || true`);
    expect(Number(relays.stdout.trim())).toBeLessThanOrEqual(4);
  });

  it('keeps the schema inspector, slow queries and their reset working', async () => {
    expect((await query(alpha.id, 'create table kept (id int primary key)')).status).toBe(200);
    const schema = await h.get(`${h.base}/${alpha.id}/schema`);
    expect(schema.status).toBe(200);
    expect(schema.body.tables.map((t: { name: string }) => t.name)).toContain('kept');
    expect((await h.get(`${h.base}/${alpha.id}/slow-queries`)).status).toBe(200);
    expect((await h.post(`${h.base}/${alpha.id}/slow-queries/reset`, {})).status).toBe(204);
  });

  it('is not superuser, cannot run programs, read server files, or create untrusted functions', async () => {
    expect((await query(alpha.id, 'select rolsuper, rolcreaterole, rolcreatedb from pg_roles where rolname = current_user')).body.rows).toEqual([
      [false, false, false],
    ]);
    expect(await raised(alpha.id, `copy (select 1) to program 'id'`)).toMatch(/permission denied|must be superuser|pg_execute_server_program/);
    expect(await raised(alpha.id, `select pg_read_file('/etc/passwd')`)).toMatch(/permission denied/);
    expect(await raised(alpha.id, `create function f() returns int language c as '/lib/x86_64-linux-gnu/libc.so.6', 'getpid'`)).toMatch(
      /permission denied for language c/,
    );
  });
});

describe('the mysql SQL console', () => {
  let gamma: { id: string; shortId: string };
  beforeAll(async () => {
    const g = await h.post(h.base, { name: 'gamma', engine: 'mysql', replicas: 1 });
    expect(g.status, JSON.stringify(g.body)).toBe(202);
    gamma = { id: g.body.id, shortId: g.body.short_id };
    await checks.running(gamma.id);
  }, 240_000);

  it('logs in as the database’s own account, without the control plane login’s grants', async () => {
    const who = await query(gamma.id, 'select current_user()');
    expect(who.status, JSON.stringify(who.body)).toBe(200);
    expect(who.body.rows).toEqual([[`app_${gamma.shortId}@127.0.0.1`]]);
    // pier_console reads performance_schema (every session's statements on the server).
    expect(await raised(gamma.id, 'select count(*) from performance_schema.threads')).toMatch(/denied/);
    // No FILE, no SUPER: the server's files stay out of reach.
    expect(await raised(gamma.id, `select 1 into outfile '/tmp/pier-probe'`)).toMatch(/denied/);
    expect((await query(gamma.id, `select load_file('/etc/passwd')`)).body.rows).toEqual([[null]]);
    expect(await raised(gamma.id, 'set global max_connections = 10')).toMatch(/denied|SUPER/);
    expect((await query(gamma.id, 'create table kept (id int primary key)')).status).toBe(200);
    expect((await query(gamma.id, 'insert into kept values (1), (2)')).body.row_count).toBe(2);
    expect((await query(gamma.id, 'select id from kept order by id')).body.rows).toEqual([[1], [2]]);
    expect((await h.get(`${h.base}/${gamma.id}/slow-queries`)).status).toBe(200);
  });
});

describe('the backup repository', () => {
  it('shows a database’s container its own backups and no other database’s', async () => {
    // Both take a backup; each backup's name (annotated in its manifest) is its own.
    const names: string[] = [];
    for (const db of [alpha, beta]) {
      const started = await h.post(`${h.base}/${db.id}/backups`, {});
      expect(started.status, JSON.stringify(started.body)).toBe(202);
      await checks.completed(db.id, started.body.name);
      names.push(started.body.name);
    }
    const [alphaBackup, betaBackup] = names as [string, string];
    // The server's OS user (what code run by the server would be) searches every
    // file it can read for the other database's backup.
    const search = (needle: string) =>
      inServer(alpha.id, 'postgres', `grep -rl --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr ${needle} / 2>/dev/null | grep -v '^/proc' || true`);
    expect((await search(alphaBackup)).stdout).toMatch(/backup\.manifest/);
    expect((await search(betaBackup)).stdout.trim()).toBe('');
    // Nor are they a directory away: nothing of beta's is named anywhere in alpha.
    const named = await inServer(
      alpha.id,
      'root',
      `find / \\( -path /proc -o -path /sys \\) -prune -o -name '${beta.id}' -print 2>/dev/null; find /var/lib/pgbackrest -maxdepth 1`,
    );
    expect(named.stdout).not.toContain(beta.id);
    // And the other way round.
    expect((await inServer(beta.id, 'postgres', `grep -rl ${alphaBackup} /var /tmp /etc /run 2>/dev/null || true`)).stdout.trim()).toBe('');
  }, 300_000);

  it('lets a fork read its source’s backups read-only while it restores, and not once it runs', async () => {
    const forked = await h.post(`${h.base}/${alpha.id}/fork`, { name: 'alpha-fork' });
    expect(forked.status, JSON.stringify(forked.body)).toBe(202);
    const fork = forked.body.id as string;
    const mounts = async () => {
      const info = await docker.getContainer(`pier-db-${fork}`).inspect();
      return Object.fromEntries((info.Mounts ?? []).map((m) => [m.Name, m.RW]));
    };
    // While it restores: its own data and repository, and only the source's repository, read-only.
    expect(await mounts()).toEqual({ [`pier-db-${fork}`]: true, [`pier-db-${fork}-backups`]: true, [`pier-db-${alpha.id}-backups`]: false });
    await checks.running(fork);
    expect(await mounts()).toEqual({ [`pier-db-${fork}`]: true, [`pier-db-${fork}-backups`]: true });
    // The copy is whole, and the fork's console is the fork's own account.
    const rows = await query(fork, 'select current_user, (select count(*) from kept)');
    expect(rows.body.rows).toEqual([[`app_${forked.body.short_id}`, 0]]);
    // Its repository is its own (the fork's archive, already), the source's is gone.
    const seen = await inServer(fork, 'postgres', `ls /var/lib/pgbackrest; ls /var/lib/pier-restore-source 2>&1 | head -1`);
    expect(seen.stdout.trim().split('\n')).toEqual(['archive', 'backup', "ls: cannot access '/var/lib/pier-restore-source': No such file or directory"]);
  }, 300_000);
});

describe('backups left in the volume every database used to share', () => {
  it('are moved into the database’s own volume, and out of the shared one, the first time they are needed', async () => {
    const id = randomUUID();
    const inVolumes = (mounts: Record<string, string>, script: string) =>
      run('docker', [
        'run',
        '--rm',
        ...Object.entries(mounts).flatMap(([v, at]) => ['-v', `${v}:${at}`]),
        '--entrypoint',
        'sh',
        'pier/pg-managed:15',
        '-c',
        script,
      ]);
    // The run's shared volume, labelled so the run's clean-up removes it.
    await docker.createVolume({ Name: TEST_BACKUP_VOLUME, Labels: testLabels() });
    const made = await inVolumes(
      { [TEST_BACKUP_VOLUME]: '/shared' },
      `mkdir -p /shared/${id}/backup && echo kept > /shared/${id}/backup/marker && chown -R postgres /shared/${id}`,
    );
    expect(made.code, made.stderr).toBe(0);
    // A deleted database's backups are read by a helper: the move happens first.
    const listing = await testDockerCluster().listBackups({ id, shortId: id.slice(0, 8), vpcId: randomUUID(), engine: 'postgresql' });
    expect(listing).toMatchObject({ readable: true, backups: [] });
    const own = await inVolumes({ [`pier-db-${id}-backups`]: '/own' }, 'cat /own/backup/marker; stat -c %U /own /own/backup/marker');
    expect(own.stdout.split('\n')).toEqual(['kept', 'postgres', 'postgres', '']);
    const shared = await inVolumes({ [TEST_BACKUP_VOLUME]: '/shared' }, `ls /shared`);
    expect(shared.stdout).not.toContain(id);
    expect((await docker.listVolumes({ filters: JSON.stringify({ name: [`pier-db-${id}-backups-moving`] }) })).Volumes ?? []).toEqual([]);
    await testDockerCluster().purgeBackups({ id, shortId: id.slice(0, 8), vpcId: randomUUID(), engine: 'postgresql' });
    expect((await docker.listVolumes({ filters: JSON.stringify({ name: [`pier-db-${id}-backups`] }) })).Volumes ?? []).toEqual([]);
  }, 120_000);
});
