/**
 * `pnpm bench`: what the gateway + auth hop costs. The same authenticated read —
 * `GET /api/v1/workspaces/{ws}/api-keys` (auth's REST, one indexed query) — is sent
 *   direct:  straight to auth's HTTP port with an identity token we signed ourselves;
 *   gateway: to the gateway with the API key, which asks auth over gRPC (key hash lookup,
 *            membership, identity token) and proxies to auth's HTTP port.
 * Auth and the gateway run as separate processes, as in production (`pier up`), the load
 * generator in this one; all on loopback. Fixed concurrency, each run bounded by a request
 * count and a duration. Runs alternate direct/gateway so drift hits both alike.
 *
 * Env: PIER_BENCH_POSTGRES_URL / PIER_BENCH_NATS_URL (else containers, see infra.ts),
 * PIER_BENCH_CONCURRENCY (16), PIER_BENCH_REQUESTS (20000), PIER_BENCH_SECONDS (10),
 * PIER_BENCH_ROUNDS (2), PIER_BENCH_PROFILE (a directory: CPU profiles of auth and gateway).
 *
 * Then the services list (bench/services.ts), database (bench/databases.ts) and database
 * backups (bench/database-backups.ts), service logs (bench/logs.ts), edge (bench/edge.ts),
 * elastic services (bench/elastic.ts), disk backups (bench/disk-backups.ts) and events and
 * webhooks (bench/events.ts) benchmarks on the same Postgres and NATS.
 * PIER_BENCH_ONLY=gateway,services,databases,backups,logs,edge,elastic,disk-backups,events picks some;
 * `backups-kubernetes` (never by default) runs the backups section on deploy/kube/cluster.sh's cluster.
 * `scale` (never by default; bench/scale.ts) runs compute and databases at 10,000 services and
 * 2,000 databases on that cluster, their pods on kwok's fake nodes (deploy/kube/build-kwok.sh):
 *   deploy/kube/cluster.sh start --user $$ && PIER_BENCH_ONLY=scale pnpm bench
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateIdentityKeys, IDENTITY_HEADER, importIdentityKey, signIdentity } from '@pier/kit';
import { createTestDatabase, freePort } from '@pier/testing';
import { ServiceProcess } from '../deploy/local/children.ts';
import { startInfra, type Infra } from './infra.ts';
import { benchServices } from './services.ts';
import { benchDatabases } from './databases.ts';
import { benchBackups } from './database-backups.ts';
import { benchLogs } from './logs.ts';
import { benchEdge } from './edge.ts';
import { benchElastic } from './elastic.ts';
import { benchDiskBackups } from './disk-backups.ts';
import { benchEvents } from './events.ts';
import { benchScale } from './scale.ts';
import { AuthClient, AUTH_RECONNECT_MAX_MS, AUTH_TIMEOUT_MS } from '@pier/gateway';
import { runClosedLoop, runLoad, type LoadResult } from './load.ts';
import { perRequest, snapshot } from './cpu.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const concurrency = Number(process.env.PIER_BENCH_CONCURRENCY ?? 16);
const maxRequests = Number(process.env.PIER_BENCH_REQUESTS ?? 20_000);
const maxSeconds = Number(process.env.PIER_BENCH_SECONDS ?? 10);
const rounds = Number(process.env.PIER_BENCH_ROUNDS ?? 2);

const fmt = (r: LoadResult) =>
  `${r.rps.toFixed(0).padStart(6)} req/s   p50 ${r.p50.toFixed(2).padStart(6)} ms   p99 ${r.p99.toFixed(2).padStart(6)} ms   (${r.requests} requests in ${r.seconds.toFixed(1)} s, ${r.errors} errors)`;

/** All runs of one kind as one: total requests over total time; percentiles over the runs' medians. */
function combine(runs: LoadResult[]): LoadResult {
  const requests = runs.reduce((n, r) => n + r.requests, 0);
  const seconds = runs.reduce((n, r) => n + r.seconds, 0);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return {
    requests,
    errors: runs.reduce((n, r) => n + r.errors, 0),
    seconds,
    rps: requests / seconds,
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
  };
}

async function benchGateway(infra: Infra): Promise<void> {
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const db = await createTestDatabase(infra.postgresAdminUrl);
    cleanups.push(() => db.drop());
    const configDir = await mkdtemp(path.join(os.tmpdir(), 'pier-bench-'));
    cleanups.push(() => rm(configDir, { recursive: true, force: true }));
    const keys = await generateIdentityKeys();
    const gatewayKeys = await generateIdentityKeys();
    const [authHttp, authGrpc, gatewayPort, gatewayMetrics] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const base: NodeJS.ProcessEnv = { ...process.env, PIER_LOG_LEVEL: 'error', PIER_BIND_HOST: '127.0.0.1' };
    // PIER_BENCH_PROFILE=<dir>: V8 CPU profiles of auth and the gateway, written when they stop.
    const nodeArgs = process.env.PIER_BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.PIER_BENCH_PROFILE)}`] : [];

    const auth = new ServiceProcess(
      'auth',
      path.join('services', 'auth', 'src', 'main.ts'),
      {
        ...base,
        PIER_DATABASE_URL: db.urls.auth,
        PIER_NATS_URL: infra.natsUrl,
        PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
        PIER_IDENTITY_PRIVATE_KEY: keys.privateJwk,
        PIER_GATEWAY_SERVICE_PUBLIC_KEY: gatewayKeys.publicJwk,
        PIER_AUTH_HTTP_PORT: String(authHttp),
        PIER_AUTH_GRPC_PORT: String(authGrpc),
        PIER_CONFIG_DIR: configDir,
        PIER_PUBLIC_URL: `http://127.0.0.1:${gatewayPort}`,
      },
      `http://127.0.0.1:${authHttp}/healthz`,
      { nodeArgs },
    );
    auth.start(root);
    cleanups.push(() => auth.stop());
    await auth.waitHealthy(60_000);
    const gateway = new ServiceProcess(
      'gateway',
      path.join('services', 'gateway', 'src', 'main.ts'),
      {
        ...base,
        PIER_GATEWAY_PORT: String(gatewayPort),
        PIER_GATEWAY_METRICS_PORT: String(gatewayMetrics),
        PIER_AUTH_GRPC_URL: `127.0.0.1:${authGrpc}`,
        PIER_AUTH_URL: `http://127.0.0.1:${authHttp}`,
        PIER_GATEWAY_SERVICE_PRIVATE_KEY: gatewayKeys.privateJwk,
        PIER_NATS_URL: infra.natsUrl,
        // The limiter stays on (its cost is part of what is measured) but never refuses.
        PIER_RATE_LIMIT_TOKEN_PER_HOUR: '100000000',
        PIER_RATE_LIMIT_TOKEN_BURST: '100000',
      },
      `http://127.0.0.1:${gatewayPort}/healthz`,
      { nodeArgs },
    );
    gateway.start(root);
    cleanups.push(() => gateway.stop());
    await gateway.waitHealthy(60_000);

    const { token } = JSON.parse(await readFile(path.join(configDir, 'credentials.json'), 'utf8')) as { token: string };
    const { workspace_id: ws } = JSON.parse(await readFile(path.join(configDir, 'config.json'), 'utf8')) as { workspace_id: string };
    const readPath = `/api/v1/workspaces/${ws}/api-keys`;
    const members = (await (
      await fetch(`http://127.0.0.1:${gatewayPort}/api/v1/workspaces/${ws}/members`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as {
      items: { user_id: string; email: string; role: string }[];
    };
    const me = members.items.find((m) => m.role === 'owner')!;
    // What auth would mint for this key: the direct path skips only the hop, not the check.
    const identity = await signIdentity(
      await importIdentityKey(keys.privateJwk),
      { kind: 'user', subject: me.user_id, email: me.email, workspaceId: ws, role: 'owner' },
      3600,
    );

    const direct = { url: `http://127.0.0.1:${authHttp}${readPath}`, headers: { [IDENTITY_HEADER]: identity } };
    const viaGateway = { url: `http://127.0.0.1:${gatewayPort}${readPath}`, headers: { authorization: `Bearer ${token}` } };
    for (const target of [direct, viaGateway]) {
      const res = await fetch(target.url, { headers: target.headers });
      if (res.status !== 200) throw new Error(`${target.url} answered ${res.status}: ${await res.text()}`);
    }

    console.log(`pier bench — GET ${readPath.replace(ws, '{ws}')}`);
    console.log(
      `  node ${process.version}, ${os.cpus().length} CPUs, concurrency ${concurrency}, each run ≤ ${maxRequests} requests / ≤ ${maxSeconds} s, ${rounds} rounds`,
    );
    // Warm-up: JIT, connection pools, the identity caches on both sides.
    await runLoad({ ...direct, concurrency, maxRequests: 2000, maxSeconds: 3 });
    await runLoad({ ...viaGateway, concurrency, maxRequests: 2000, maxSeconds: 3 });

    const runs = { direct: [] as LoadResult[], gateway: [] as LoadResult[] };
    const database = new URL(db.adminUrl).pathname.slice(1);
    const pids = { auth: auth.pid, gateway: gateway.pid };
    const measured = async (label: string, target: { url: string; headers: Record<string, string> }, into: LoadResult[], round: number) => {
      const before = await snapshot(pids, database);
      const r = await runLoad({ ...target, concurrency, maxRequests, maxSeconds });
      const after = await snapshot(pids, database);
      console.log(`  ${label.padEnd(8)} #${round} ${fmt(r)}`);
      console.log(`             CPU ms per request: ${perRequest(before, after, r.requests)}`);
      into.push(r);
    };
    for (let i = 1; i <= rounds; i++) {
      await measured('direct', direct, runs.direct, i);
      await measured('gateway', viaGateway, runs.gateway, i);
    }
    // Where the hop's cost goes: auth's gRPC Authenticate alone, as the gateway calls it.
    const grpcClient = new AuthClient(`127.0.0.1:${authGrpc}`, {
      serviceKey: gatewayKeys.privateJwk,
      timeoutMs: AUTH_TIMEOUT_MS,
      reconnectMaxMs: AUTH_RECONNECT_MAX_MS,
    });
    const authenticate = () =>
      grpcClient.authenticate(token, ws, '').then(
        () => true,
        () => false,
      );
    await runClosedLoop(authenticate, { concurrency, maxRequests: 2000, maxSeconds: 3 });
    {
      const before = await snapshot(pids, database);
      const a = await runClosedLoop(authenticate, { concurrency, maxRequests, maxSeconds });
      const after = await snapshot(pids, database);
      console.log(`  auth gRPC Authenticate alone: ${fmt(a)}`);
      console.log(`             CPU ms per request: ${perRequest(before, after, a.requests)}`);
    }
    grpcClient.close();

    // The hop's own latency, without queueing: one request at a time.
    const serial = {
      direct: await runLoad({ ...direct, concurrency: 1, maxRequests: 2000, maxSeconds: 5 }),
      gateway: await runLoad({ ...viaGateway, concurrency: 1, maxRequests: 2000, maxSeconds: 5 }),
    };
    console.log(`  direct   c=1 ${fmt(serial.direct)}`);
    console.log(`  gateway  c=1 ${fmt(serial.gateway)}`);
    const d = combine(runs.direct);
    const g = combine(runs.gateway);
    const ratio = g.rps / d.rps;
    const added = g.p50 - d.p50;
    console.log('');
    console.log(`  direct   ${fmt(d)}`);
    console.log(`  gateway  ${fmt(g)}`);
    console.log(`  throughput kept through the gateway: ${(ratio * 100).toFixed(1)}%  (target ≥ 70%: ${ratio >= 0.7 ? 'met' : 'MISSED'})`);
    console.log(
      // The target is one request at a time (below); under load the difference is mostly queueing on 2 cores.
      `  added at p50, concurrency ${concurrency}: ${added.toFixed(2)} ms;  at p99: ${(g.p99 - d.p99).toFixed(2)} ms`,
    );
    const serialAdded = serial.gateway.p50 - serial.direct.p50;
    console.log(
      `  added at p50, one request at a time: ${serialAdded.toFixed(2)} ms  (target ≤ 1 ms: ${serialAdded <= 1 ? 'met' : 'MISSED'});  at p99: ${(serial.gateway.p99 - serial.direct.p99).toFixed(2)} ms`,
    );
    // The gateway's cache of auth's answers (PIER_AUTH_CACHE): how many requests it answered.
    const metricsText = await (await fetch(`http://127.0.0.1:${gatewayMetrics}/metrics`)).text();
    const cached = (result: string) =>
      Number(new RegExp(`^pier_gateway_auth_cache_total\\{[^}]*result="${result}"[^}]*\\} (\\S+)$`, 'm').exec(metricsText)?.[1] ?? 0);
    const [hit, miss, off] = ['hit', 'miss', 'off'].map(cached) as [number, number, number];
    console.log(
      `  auth answer cache: ${hit} hits, ${miss} misses, ${off} asked without it (hit rate ${((100 * hit) / Math.max(1, hit + miss + off)).toFixed(2)}%)`,
    );
    if (d.errors + g.errors > 0) throw new Error(`${d.errors + g.errors} requests failed`);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const only = new Set(
    (process.env.PIER_BENCH_ONLY ?? 'gateway,services,databases,backups,logs,edge,elastic,disk-backups,events').split(',').map((s) => s.trim()),
  );
  const infra = await startInfra();
  try {
    if (only.has('gateway')) await benchGateway(infra);
    const log = (line: string) => console.log(line);
    if (only.has('services')) {
      console.log('');
      await benchServices({ infra, log });
    }
    if (only.has('databases')) {
      console.log('');
      await benchDatabases({ infra, log });
    }
    if (only.has('backups')) {
      console.log('');
      await benchBackups({ infra, log });
    }
    // Only when asked for: it needs the test cluster of deploy/kube/cluster.sh running.
    if (only.has('backups-kubernetes')) {
      console.log('');
      await benchBackups({ infra, log, cluster: 'kubernetes' });
    }
    if (only.has('logs')) {
      console.log('');
      await benchLogs({ infra, log });
    }
    if (only.has('edge')) {
      console.log('');
      await benchEdge({ infra, log });
    }
    if (only.has('elastic')) {
      console.log('');
      await benchElastic({ infra, log });
    }
    if (only.has('disk-backups')) {
      console.log('');
      await benchDiskBackups({ infra, log });
    }
    if (only.has('events')) {
      console.log('');
      await benchEvents({ infra, log });
    }
    // Only when asked for, as backups-kubernetes: the test cluster, and half an hour at full size.
    if (only.has('scale')) {
      console.log('');
      await benchScale({ infra, log });
    }
  } finally {
    await infra.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`bench failed: ${(err as Error).stack ?? err}`);
    process.exit(1);
  },
);
