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
 *
 * PIER_BENCH_DATABASES_CLUSTER=kubernetes (section `backups-kubernetes` of `pnpm bench`):
 * the same on the test cluster of deploy/kube/cluster.sh (started first), its databases run
 * by Pier itself (no operator), the repository in the cluster's S3 store; the databases
 * service takes the PIER_DATABASES_* and PIER_KUBECONFIG exports of `cluster.sh env`, and
 * the data is loaded from this host through the external NodePort.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { vpcNamespace } from '@pier/kit';
import { inVpc, mysqlCli } from '@pier/testing';
import { startInfra, type Infra } from './infra.ts';
import { removeLeftovers, request } from './databases.ts';
import { startPlatformAt } from '../test/support/platform-core.ts';

type Call = Awaited<ReturnType<typeof request>>;

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The databases service's settings for the test cluster: what `deploy/kube/cluster.sh env` exports for it. */
async function kubernetesDatabasesEnv(): Promise<Record<string, string>> {
  const { stdout } = await run('bash', [path.join(root, 'deploy/kube/cluster.sh'), 'env']);
  const env: Record<string, string> = {};
  for (const m of stdout.matchAll(/^export (PIER_[A-Z0-9_]+)=(.*)$/gm)) {
    if (m[1] === 'PIER_CLUSTER' || m[1] === 'PIER_KUBECONFIG' || m[1]!.startsWith('PIER_DATABASES_')) env[m[1]!] = m[2]!;
  }
  if (env.PIER_CLUSTER !== 'kubernetes') throw new Error('deploy/kube/cluster.sh env names no cluster: start it first');
  return env;
}

export interface BackupBenchResult {
  postgresql: { dataBytes: number; backupMs: number; backupBytes: number; restoreMs: number; forkMs: number; pitrMs: number };
  mysql: { dataBytes: number; backupMs: number; backupBytes: number; restoreMs: number };
}

export async function benchBackups(opts: { infra?: Infra; log?: (line: string) => void; cluster?: 'docker' | 'kubernetes' } = {}): Promise<BackupBenchResult> {
  const log = opts.log ?? ((l: string) => console.log(l));
  const scale = Number(process.env.PIER_BENCH_BACKUP_SCALE ?? 67);
  const mysqlDoublings = Number(process.env.PIER_BENCH_BACKUP_MYSQL_ROWS_LOG2 ?? 22);
  const kubernetes = (opts.cluster ?? process.env.PIER_BENCH_DATABASES_CLUSTER) === 'kubernetes';
  const clusterEnv = kubernetes ? await kubernetesDatabasesEnv() : {};
  const infra = opts.infra ?? (await startInfra());
  const volume = `pier-bench-backups-${process.pid}`;
  const platform = await startPlatformAt({
    postgresAdminUrl: infra.postgresAdminUrl,
    natsUrl: infra.natsUrl,
    logLevel: 'warn',
    env: { databases: { PIER_DATABASES_BACKUP_VOLUME: volume, PIER_DATABASES_PROVISION_TIMEOUT_SECONDS: '1800', ...clusterEnv } },
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
    const { ms } = await until(`/${res.body.id}`, (d) => d.status === 'running', since, what);
    // The test cluster's one node has 2 CPUs: a measured copy goes before the next starts.
    if (kubernetes && what !== 'provision postgresql' && what !== 'provision mysql') await api('DELETE', `/${res.body.id}`);
    return ms;
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
    const ms = await runningFrom(res, performance.now(), `provision ${engine}`);
    log(`  ${engine} provisioned (svc.large, 20 GB) → running: ${seconds(ms)}`);
    return { id: res.body.id, conn: (await api('GET', `/${res.body.id}/connection`)).body };
  }
  /**
   * A PostgreSQL client tool against the database: from inside the VPC's network on docker;
   * on kubernetes from this host through the external NodePort (the node masquerades it
   * into the pod network, so it is inside).
   */
  async function pgTool(id: string, conn: any, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    if (!kubernetes) return inVpc(vpcId, 'pier/pg-managed:15', [...args, conn.database_url]);
    const patched = await api('PATCH', `/${id}`, { external_access_enabled: true });
    if (patched.status !== 200) throw new Error(`external access: ${patched.status} ${JSON.stringify(patched.body)}`);
    const url = (await api('GET', `/${id}/connection`)).body.external_url;
    for (let attempt = 0; ; attempt++) {
      try {
        const { stdout, stderr } = await run(args[0]!, [...args.slice(1), url], { maxBuffer: 64 << 20 });
        return { code: 0, stdout, stderr };
      } catch (err) {
        const e = err as { code?: number; stdout?: string; stderr?: string };
        // kube-proxy opens a new NodePort within moments.
        if (attempt < 20 && /Connection refused|timed out/.test(e.stderr ?? '')) {
          await new Promise((r) => setTimeout(r, 500));
          continue;
        }
        return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
      }
    }
  }

  try {
    log(
      kubernetes
        ? 'pier bench — database backups on the kubernetes test cluster (built in, no operator; repository: its S3 store), through the gateway'
        : 'pier bench — database backups on docker (repository: a named volume), through the gateway',
    );

    // ---- postgresql ----
    const pg = await provision('bench-pg', 'postgresql');
    let t0 = performance.now();
    const init = await pgTool(pg.id, pg.conn, ['pgbench', '-i', '-q', '-s', String(scale)]);
    if (init.code !== 0) throw new Error(`pgbench -i: ${init.stderr}`);
    const size = await pgTool(pg.id, pg.conn, ['psql', '-X', '-tA', '-c', 'select pg_database_size(current_database())', '-d']);
    const pgBytes = Number(size.stdout.trim());
    log(`  postgresql: pgbench -i -s ${scale}: ${(pgBytes / 1024 ** 3).toFixed(2)} GiB in ${seconds(performance.now() - t0)}`);

    const pgBackup = await backup(pg.id);
    log(`  postgresql backup → completed: ${seconds(pgBackup.ms)} (${(pgBackup.bytes / 1024 ** 2).toFixed(0)} MiB stored, lz4)`);

    // WAL after the backup, replayed by the point-in-time restore.
    const bench = await pgTool(pg.id, pg.conn, ['pgbench', '-n', '-T', '10', '-c', '2']);
    if (bench.code !== 0) throw new Error(`pgbench: ${bench.stderr}`);
    const target = new Date().toISOString();
    await pgTool(pg.id, pg.conn, ['pgbench', '-n', '-T', '3', '-c', '2']);

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
    // kube-proxy opens a new NodePort within moments: a refused first connection is retried.
    // (About a minute on 2 busy cores: the client's usual 60 s would cut it.)
    const load = () => mysqlCli(myUrl, fill, undefined, 600_000);
    let loaded = await load();
    for (let i = 0; kubernetes && i < 20 && /Can't connect/.test(loaded.stderr); i++) {
      await new Promise((r) => setTimeout(r, 500));
      loaded = await load();
    }
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
    if (kubernetes) {
      // The VPC's namespace holds every database the run made (their volumes go with it).
      const kubectl = path.join((await readFile(path.join(path.dirname(clusterEnv.PIER_KUBECONFIG!), 'bin'), 'utf8')).trim(), 'kubectl');
      await run(kubectl, ['--kubeconfig', clusterEnv.PIER_KUBECONFIG!, 'delete', 'namespace', vpcNamespace(vpcId), '--wait=false']).catch(() => undefined);
    }
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
