/**
 * Database backups benchmark (issue 10), on the docker cluster adapter, through the
 * gateway, with the repository on the default volume:
 *   postgresql: a database of about 1 GB (`pgbench -i` at scale 67, run from inside the
 *   VPC's network), then the time to take a full backup (POST backups → completed), to
 *   restore it into a new database (POST backups/restore → running), to fork
 *   (POST fork → running), and to restore to a point in time a few seconds after the backup
 *   (with WAL written in between, replayed by the restore);
 *   mysql: a table of a comparable size, the same backup and restore.
 * Every time is measured from the request to the record reading what was awaited, polled
 * every 250 ms. The databases are svc.large (2 CPUs, 4 GiB) so loading 1 GB takes minutes
 * rather than an hour at svc.nano's quarter CPU.
 *
 * `benchBackups()` is what `pnpm bench` calls (section `backups`); `tsx bench/database-backups.ts`
 * runs it alone. Env: PIER_BENCH_BACKUP_SCALE (pgbench scale, 67 ≈ 1 GB),
 * PIER_BENCH_BACKUP_MYSQL_ROWS_LOG2 (22: 4 Mi rows of ~250 bytes ≈ 1 GB).
 */
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { inVpc, mysqlCli } from '@pier/testing';
import { startInfra, type Infra } from './infra.ts';
import { removeLeftovers, request } from './databases.ts';
import { startPlatformAt } from '../test/support/platform-core.ts';

type Call = Awaited<ReturnType<typeof request>>;

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export interface BackupBenchResult {
  postgresql: { dataBytes: number; backupMs: number; backupBytes: number; restoreMs: number; forkMs: number; pitrMs: number };
  mysql: { dataBytes: number; backupMs: number; backupBytes: number; restoreMs: number };
}

export async function benchBackups(opts: { infra?: Infra; log?: (line: string) => void } = {}): Promise<BackupBenchResult> {
  const log = opts.log ?? ((l: string) => console.log(l));
  const scale = Number(process.env.PIER_BENCH_BACKUP_SCALE ?? 67);
  const mysqlDoublings = Number(process.env.PIER_BENCH_BACKUP_MYSQL_ROWS_LOG2 ?? 22);
  const infra = opts.infra ?? (await startInfra());
  const volume = `pier-bench-backups-${process.pid}`;
  const platform = await startPlatformAt({
    postgresAdminUrl: infra.postgresAdminUrl,
    natsUrl: infra.natsUrl,
    logLevel: 'warn',
    env: { databases: { PIER_DATABASES_BACKUP_VOLUME: volume, PIER_DATABASES_PROVISION_TIMEOUT_SECONDS: '1800' } },
  });
  const { token, workspaceId, vpcId } = platform.bootstrap;
  const base = `${platform.gatewayUrl}/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}/databases`;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const api = (method: string, path: string, body?: unknown) => request(agent, new URL(`${base}${path}`), token, method, body);

  /** Polls until `done` holds on the answer of GET `path`; its time from `since`. */
  async function until(path: string, done: (body: any) => boolean, since: number, what: string): Promise<{ ms: number; body: any }> {
    for (;;) {
      const r = await api('GET', path);
      if (r.status === 200 && done(r.body)) return { ms: performance.now() - since, body: r.body };
      if (r.body?.status === 'error') throw new Error(`${what}: ${r.body.status_reason}`);
      if (performance.now() - since > 1_800_000) throw new Error(`${what}: not done within 30 min: ${JSON.stringify(r.body)}`);
      await new Promise((res) => setTimeout(res, 250));
    }
  }
  const runningFrom = async (res: Call, since: number, what: string) => {
    if (res.status !== 202) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
    return (await until(`/${res.body.id}`, (d) => d.status === 'running', since, what)).ms;
  };
  async function backup(id: string): Promise<{ ms: number; bytes: number }> {
    const t0 = performance.now();
    const res = await api('POST', `/${id}/backups`, {});
    if (res.status !== 202) throw new Error(`backup: ${res.status} ${JSON.stringify(res.body)}`);
    const { ms, body } = await until(`/${id}/backups`, (l) => l.items.some((b: any) => b.name === res.body.name && b.status !== 'running'), t0, 'backup');
    const b = body.items.find((x: any) => x.name === res.body.name);
    if (b.status !== 'completed') throw new Error(`backup failed: ${b.error}`);
    return { ms, bytes: b.size_bytes };
  }
  async function provision(name: string, engine: string): Promise<{ id: string; conn: any }> {
    const res = await api('POST', '', { name, engine, instance_type: 'svc.large', storage_gb: 20 });
    await runningFrom(res, performance.now(), `provision ${engine}`);
    return { id: res.body.id, conn: (await api('GET', `/${res.body.id}/connection`)).body };
  }

  try {
    log('pier bench — database backups on docker (repository: a named volume), through the gateway');

    // ---- postgresql ----
    const pg = await provision('bench-pg', 'postgresql');
    let t0 = performance.now();
    const init = await inVpc(vpcId, 'pier/pg-managed:15', ['pgbench', '-i', '-q', '-s', String(scale), pg.conn.database_url]);
    if (init.code !== 0) throw new Error(`pgbench -i: ${init.stderr}`);
    const size = await inVpc(vpcId, 'pier/pg-managed:15', [
      'psql',
      '-X',
      '-tA',
      '-d',
      pg.conn.database_url,
      '-c',
      'select pg_database_size(current_database())',
    ]);
    const pgBytes = Number(size.stdout.trim());
    log(`  postgresql: pgbench -i -s ${scale}: ${(pgBytes / 1024 ** 3).toFixed(2)} GiB in ${seconds(performance.now() - t0)}`);

    const pgBackup = await backup(pg.id);
    log(`  postgresql backup → completed: ${seconds(pgBackup.ms)} (${(pgBackup.bytes / 1024 ** 2).toFixed(0)} MiB stored, lz4)`);

    // WAL after the backup, replayed by the point-in-time restore.
    const bench = await inVpc(vpcId, 'pier/pg-managed:15', ['pgbench', '-n', '-T', '10', '-c', '2', pg.conn.database_url]);
    if (bench.code !== 0) throw new Error(`pgbench: ${bench.stderr}`);
    const target = new Date().toISOString();
    await inVpc(vpcId, 'pier/pg-managed:15', ['pgbench', '-n', '-T', '3', '-c', '2', pg.conn.database_url]);

    t0 = performance.now();
    const restoreMs = await runningFrom(await api('POST', `/${pg.id}/backups/restore`, { name: 'bench-pg-restore' }), t0, 'restore');
    log(`  postgresql restore (newest backup) → running: ${seconds(restoreMs)}  (goal ≤ 30 s: ${restoreMs <= 30_000 ? 'met' : 'MISSED'})`);
    t0 = performance.now();
    const forkMs = await runningFrom(await api('POST', `/${pg.id}/fork`, { name: 'bench-pg-fork' }), t0, 'fork');
    log(`  postgresql fork → running: ${seconds(forkMs)}  (goal ≤ 30 s: ${forkMs <= 30_000 ? 'met' : 'MISSED'})`);
    t0 = performance.now();
    const pitrMs = await runningFrom(await api('POST', `/${pg.id}/backups/restore`, { name: 'bench-pg-pitr', target_time: target }), t0, 'pitr');
    log(
      `  postgresql point-in-time restore (10 s of pgbench WAL replayed) → running: ${seconds(pitrMs)}  (goal ≤ 30 s: ${pitrMs <= 30_000 ? 'met' : 'MISSED'})`,
    );

    // ---- mysql ----
    const my = await provision('bench-my', 'mysql');
    const myUrl =
      (await api('PATCH', `/${my.id}`, { external_access_enabled: true })).status === 200 ? (await api('GET', `/${my.id}/connection`)).body.external_url : '';
    t0 = performance.now();
    const fill = [
      'create table t (id bigint auto_increment primary key, pad char(240) not null)',
      "insert into t (pad) values (repeat('x', 240))",
      ...Array.from({ length: mysqlDoublings }, () => 'insert into t (pad) select pad from t'),
    ].join('; ');
    const loaded = await mysqlCli(myUrl, fill);
    if (loaded.code !== 0) throw new Error(`mysql load: ${loaded.stderr}`);
    const mySize = await mysqlCli(myUrl, "select data_length + index_length from information_schema.tables where table_name = 't'");
    const myBytes = Number(mySize.stdout.trim());
    log(`  mysql: ${2 ** mysqlDoublings} rows: ${(myBytes / 1024 ** 3).toFixed(2)} GiB in ${seconds(performance.now() - t0)}`);
    const myBackup = await backup(my.id);
    log(`  mysql backup → completed: ${seconds(myBackup.ms)} (${(myBackup.bytes / 1024 ** 2).toFixed(0)} MiB stored, zstd)`);
    const names = (await api('GET', `/${my.id}/backups`)).body.items.map((b: any) => b.name);
    t0 = performance.now();
    const myRestoreMs = await runningFrom(
      await api('POST', `/${my.id}/backups/restore`, { name: 'bench-my-restore', backup_name: names[0] }),
      t0,
      'mysql restore',
    );
    log(`  mysql restore → running: ${seconds(myRestoreMs)}  (goal ≤ 30 s: ${myRestoreMs <= 30_000 ? 'met' : 'MISSED'})`);

    return {
      postgresql: { dataBytes: pgBytes, backupMs: pgBackup.ms, backupBytes: pgBackup.bytes, restoreMs, forkMs, pitrMs },
      mysql: { dataBytes: myBytes, backupMs: myBackup.ms, backupBytes: myBackup.bytes, restoreMs: myRestoreMs },
    };
  } finally {
    agent.destroy();
    await platform.stop().catch(() => undefined);
    await removeLeftovers(vpcId, [volume]).catch(() => undefined);
    if (!opts.infra) await infra.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  benchBackups().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`backups bench failed: ${(err as Error).stack ?? err}`);
      process.exit(1);
    },
  );
}
