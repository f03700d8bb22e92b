/**
 * Databases benchmark (issue 5), on the docker cluster adapter, through the gateway:
 *   1. time from `POST databases` to the detail reading `running`, per engine
 *      (postgresql = pier/pg-managed:15 on svc.nano, mysql = MariaDB 10.11 on svc.small),
 *      polled every 50 ms; each database is deleted before the next is provisioned;
 *   2. the round-trip of a trivial `POST .../query` (`select 1`) on a running PostgreSQL:
 *      gateway -> auth (gRPC) -> databases -> a fresh connection to the database — p50, p99;
 *   3. a client outside opening a TLS connection and running `select 1`, through Pier's
 *      PostgreSQL listener (routed by SNI) and, to see what the listener adds, straight to
 *      the server's address — p50, p99 of connect + query + close.
 * The whole platform runs in this process (test/support/platform-core.ts).
 *
 * `benchDatabases()` is what `pnpm bench` calls; `tsx bench/databases.ts` runs it alone.
 * Env: PIER_BENCH_DB_PROVISIONS (3 per engine), PIER_BENCH_QUERY_REQUESTS (300),
 * PIER_BENCH_LISTENER_CONNECTIONS (200),
 * PIER_BENCH_POSTGRES_URL / PIER_BENCH_NATS_URL (else containers, see infra.ts).
 */
import http from 'node:http';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startInfra, type Infra } from './infra.ts';
import { startPlatformAt } from '../test/support/platform-core.ts';

const run = promisify(execFile);

export interface Timing {
  samples: number[];
  p50: number;
  max: number;
}

export interface DatabasesBenchResult {
  provisionToRunning: { postgresql: Timing; mysql: Timing };
  query: { requests: number; p50: number; p99: number };
  /** Connect (TLS) + `select 1` + close from outside, through the listener and straight to the server. */
  externalConnection: { connections: number; listener: { p50: number; p99: number }; direct: { p50: number; p99: number } };
}

const DOMAIN = 'pg.bench.test';

function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

function timing(samples: number[]): Timing {
  const s = [...samples].sort((a, b) => a - b);
  return { samples, p50: percentile(s, 0.5), max: s[s.length - 1]! };
}

/** One request over a keep-alive agent, with its latency. */
export function request(agent: http.Agent, url: URL, token: string, method: string, body?: unknown): Promise<{ status: number; body: any; ms: number }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const t0 = performance.now();
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        agent,
        headers: { authorization: `Bearer ${token}`, ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined, ms: performance.now() - t0 });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** Removes what the docker adapter made in the VPC, and `volumes` besides (a backup repository). */
export async function removeLeftovers(vpcId: string, volumes: string[] = []): Promise<void> {
  const filters = ['--filter', 'label=pier.service=databases', '--filter', `label=pier.vpc=${vpcId}`];
  const { stdout } = await run('docker', ['ps', '-a', '--format', '{{.ID}} {{.Label "pier.database"}}', ...filters]);
  const rows = stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(' '));
  const ids = rows.map(([id]) => id!);
  if (ids.length) await run('docker', ['rm', '-f', '-v', ...ids]).catch(() => undefined);
  // Each database's backups have a volume of their own, labelled without the VPC (they outlive the database).
  const databases = new Set(rows.map(([, db]) => db).filter(Boolean));
  const backups = [...databases].flatMap((db) => [`pier-db-${db}-backups`, `pier-db-${db}-backups-moving`]);
  const vols = [...(await run('docker', ['volume', 'ls', '-q', ...filters])).stdout.trim().split('\n').filter(Boolean), ...backups];
  if (vols.length + volumes.length) await run('docker', ['volume', 'rm', '-f', ...vols, ...volumes]).catch(() => undefined);
  await run('docker', ['network', 'rm', `pier-vpc-${vpcId}`]).catch(() => undefined);
}

export async function benchDatabases(opts: { infra?: Infra; log?: (line: string) => void } = {}): Promise<DatabasesBenchResult> {
  const log = opts.log ?? ((l: string) => console.log(l));
  const provisions = Number(process.env.PIER_BENCH_DB_PROVISIONS ?? 3);
  const queries = Number(process.env.PIER_BENCH_QUERY_REQUESTS ?? 300);
  const infra = opts.infra ?? (await startInfra());
  const connections = Number(process.env.PIER_BENCH_LISTENER_CONNECTIONS ?? 200);
  const platform = await startPlatformAt({
    postgresAdminUrl: infra.postgresAdminUrl,
    natsUrl: infra.natsUrl,
    logLevel: 'warn',
    env: { databases: { PIER_POSTGRES_EXTERNAL_DOMAIN: DOMAIN, PIER_DATABASES_POSTGRES_EXTERNAL_PORT: '0' } },
  });
  const { token, workspaceId, vpcId } = platform.bootstrap;
  const base = `${platform.gatewayUrl}/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}/databases`;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    log('pier bench — databases on docker, through the gateway');

    const provisionOnce = async (engine: 'postgresql' | 'mysql', name: string, keep: boolean): Promise<{ ms: number; id: string }> => {
      const start = performance.now();
      const res = await request(agent, new URL(base), token, 'POST', { name, engine, external_access_enabled: keep });
      if (res.status !== 202) throw new Error(`provision ${engine}: ${res.status} ${JSON.stringify(res.body)}`);
      const detail = new URL(`${base}/${res.body.id}`);
      for (;;) {
        const r = await request(agent, detail, token, 'GET');
        if (r.body.status === 'running') break;
        if (r.body.status === 'error') throw new Error(`${engine} database failed: ${r.body.status_reason}`);
        if (performance.now() - start > 180_000) throw new Error(`${engine} database not running within 180 s`);
        await new Promise((res2) => setTimeout(res2, 50));
      }
      const ms = performance.now() - start;
      if (!keep) {
        await request(agent, detail, token, 'DELETE');
        for (let i = 0; i < 600 && (await request(agent, detail, token, 'GET')).status !== 404; i++) await new Promise((r) => setTimeout(r, 100));
      }
      return { ms, id: res.body.id };
    };

    const provisionToRunning = {} as DatabasesBenchResult['provisionToRunning'];
    for (const engine of ['postgresql', 'mysql'] as const) {
      const samples: number[] = [];
      for (let i = 0; i < provisions; i++) {
        const { ms } = await provisionOnce(engine, `bench-${engine.slice(0, 5)}-${i}`, false);
        samples.push(ms);
        log(`  ${engine} #${i + 1}: running after ${ms.toFixed(0)} ms`);
      }
      provisionToRunning[engine] = timing(samples);
      log(
        `  provision → running, ${engine}: median ${provisionToRunning[engine].p50.toFixed(0)} ms, max ${provisionToRunning[engine].max.toFixed(0)} ms over ${provisions}`,
      );
    }

    const { id } = await provisionOnce('postgresql', 'bench-query', true);
    const queryUrl = new URL(`${base}/${id}/query`);
    for (let i = 0; i < 20; i++) await request(agent, queryUrl, token, 'POST', { sql: 'select 1' }); // warm-up
    const latencies: number[] = [];
    for (let i = 0; i < queries; i++) {
      const r = await request(agent, queryUrl, token, 'POST', { sql: 'select 1' });
      if (r.status !== 200 || r.body.rows[0][0] !== 1) throw new Error(`query answered ${r.status}: ${JSON.stringify(r.body)}`);
      latencies.push(r.ms);
    }
    const sorted = [...latencies].sort((a, b) => a - b);
    const query = { requests: queries, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) };
    log(`  query "select 1" through the gateway: p50 ${query.p50.toFixed(2)} ms, p99 ${query.p99.toFixed(2)} ms (${queries} requests, one at a time)`);

    const conn = (await request(agent, new URL(`${base}/${id}/connection`), token, 'GET')).body;
    const { stdout } = await run('docker', ['inspect', '-f', `{{(index .NetworkSettings.Networks "pier-vpc-${vpcId}").IPAddress}}`, `pier-db-${id}`]);
    const via = async (host: string, port: number): Promise<{ p50: number; p99: number }> => {
      const once = async () => {
        const t0 = performance.now();
        const client = new pg.Client({
          host,
          port,
          user: conn.username,
          password: conn.password,
          database: conn.database,
          ssl: { rejectUnauthorized: false, servername: conn.external_host },
        });
        await client.connect();
        await client.query('select 1');
        await client.end();
        return performance.now() - t0;
      };
      for (let i = 0; i < 10; i++) await once(); // warm-up
      const ms: number[] = [];
      for (let i = 0; i < connections; i++) ms.push(await once());
      ms.sort((a, b) => a - b);
      return { p50: percentile(ms, 0.5), p99: percentile(ms, 0.99) };
    };
    const externalConnection = { connections, listener: await via('127.0.0.1', conn.external_port), direct: await via(stdout.trim(), 5432) };
    const f = (t: { p50: number; p99: number }) => `p50 ${t.p50.toFixed(2)} ms, p99 ${t.p99.toFixed(2)} ms`;
    log(
      `  a client outside, TLS connect + "select 1" + close: through the listener (SNI) ${f(externalConnection.listener)}; straight to the server ${f(externalConnection.direct)} (${connections} connections, one at a time)`,
    );
    return { provisionToRunning, query, externalConnection };
  } finally {
    agent.destroy();
    await platform.stop().catch(() => undefined);
    await removeLeftovers(vpcId).catch(() => undefined);
    if (!opts.infra) await infra.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  benchDatabases().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`databases bench failed: ${(err as Error).stack ?? err}`);
      process.exit(1);
    },
  );
}
