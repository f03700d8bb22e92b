/**
 * Service logs benchmark (issue 11), compute alone on the docker cluster, in this process:
 *   1. collection: a worker printing numbered lines as fast as a shell loop can; every second,
 *      how far it printed (its newest line, from the Engine) and how far history got (the
 *      newest stored line) — the lines per second collection sustains, and its lag. Then
 *      compute is stopped while the worker prints on, and started again: how fast it drains
 *      that backlog (collection's own ceiling, the printer no longer the limit);
 *   2. history: one million lines of one service over the last 24 hours written through the
 *      store (batches of 10,000), then `GET logs/history` timed one request at a time — the
 *      default (last hour, 100 lines), a 5,000-line page, pages deep in a range through the
 *      cursor, and a substring search (`q`) matching one line in a thousand.
 *
 * `benchLogs()` is what `pnpm bench` calls (PIER_BENCH_ONLY=logs); `tsx bench/logs.ts` runs it
 * alone. Env: PIER_BENCH_LOG_SECONDS (20), PIER_BENCH_LOG_LINES (1000000),
 * PIER_BENCH_HISTORY_REQUESTS (200), PIER_BENCH_POSTGRES_URL / PIER_BENCH_NATS_URL.
 */
import http from 'node:http';
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createDb, generateIdentityKeys, IDENTITY_HEADER, importIdentityKey, signIdentity, type RunningService } from '@pier/kit';
import { createTestDatabase, docker, removeVpcObjects } from '@pier/testing';
import { readConfig, start } from '@pier/compute';
import { KnexLogStore } from '../services/compute/src/store/log-store.ts';
import { timestampOf } from '../services/compute/src/domain/logs/log-time.ts';
import type { StoredLine } from '../services/compute/src/domain/logs/log-port.ts';
import { startInfra, type Infra } from './infra.ts';

const PRINTER = 'i=0; while :; do echo "bench line $i: the quick brown fox jumps over the lazy dog"; i=$((i+1)); done';

export interface LogsBenchResult {
  collection: { producedPerSecond: number; storedPerSecond: number; notStored: number; drainPerSecond: number; computeCpuPercent: number };
  history: { lines: number; insertPerSecond: number; p50: Record<string, number>; p99: Record<string, number> };
}

function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One GET straight to compute with an identity token, over a keep-alive agent. */
function get(agent: http.Agent, url: string, identity: string): Promise<{ status: number; body: any; ms: number }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, headers: { [IDENTITY_HEADER]: identity }, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')), ms: performance.now() - t0 }));
    });
    req.on('error', reject);
    req.end();
  });
}

export async function benchLogs(opts: { infra?: Infra; log?: (line: string) => void } = {}): Promise<LogsBenchResult> {
  const log = opts.log ?? ((l: string) => console.log(l));
  const seconds = Number(process.env.PIER_BENCH_LOG_SECONDS ?? 20);
  const total = Number(process.env.PIER_BENCH_LOG_LINES ?? 1_000_000);
  const requests = Number(process.env.PIER_BENCH_HISTORY_REQUESTS ?? 200);
  const infra = opts.infra ?? (await startInfra());
  const db = await createTestDatabase(infra.postgresAdminUrl);
  const keys = await generateIdentityKeys();
  const workspaceId = randomUUID();
  const vpcId = randomUUID();
  const identity = await signIdentity(
    await importIdentityKey(keys.privateJwk),
    { kind: 'user', subject: randomUUID(), role: 'owner', workspaceId, vpcId },
    3600,
  );
  const env = {
    PIER_DATABASE_URL: db.urls.compute,
    PIER_NATS_URL: infra.natsUrl,
    PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
    PIER_COMPUTE_HTTP_PORT: '0',
    PIER_LOG_LEVEL: 'warn',
    // No edge: the benchmark reads logs, and must not take this machine's ports 80 and 443.
    PIER_EDGE: 'off',
  };
  let compute: RunningService = await start(readConfig(env));
  const admin = new pg.Client({ connectionString: db.adminUrl });
  await admin.connect();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const base = () => `http://127.0.0.1:${compute.httpPort}/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}/services`;
  try {
    log(`pier bench — service logs on docker, compute in this process (node ${process.version}, ${os.cpus().length} CPUs)`);
    const created = await fetch(base(), {
      method: 'POST',
      headers: { [IDENTITY_HEADER]: identity, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'printer', service_type: 'worker', image: 'pier/debian-base:bookworm', command: ['sh', '-c', PRINTER] }),
    });
    if (created.status !== 201) throw new Error(`create: ${created.status} ${await created.text()}`);
    const serviceId = ((await created.json()) as { id: string }).id;
    const [container] = await docker.listContainers({ filters: JSON.stringify({ label: [`pier.service=${serviceId}`] }) });
    if (!container) throw new Error('the printer has no container');

    /** The number of the newest line the printer wrote (what the Engine has). */
    const produced = async () => {
      const out = (await docker.getContainer(container.Id).logs({ stdout: true, tail: 1 })).toString('latin1');
      return Number(/bench line (\d+)/.exec(out)?.[1] ?? NaN);
    };
    /** Lines stored (counted: a printer faster than collection loses lines to json-file's rotation, so numbers skip). */
    const stored = async () => Number((await admin.query(`select count(*) as n from compute.log_lines where service_id = $1`, [serviceId])).rows[0].n);

    // 1. Collection, steady: skip the first seconds (start-up), then measure.
    await sleep(5000);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const [p0, s0] = [await produced(), await stored()];
    await sleep(seconds * 1000);
    const [p1, s1] = [await produced(), await stored()];
    const elapsed = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const producedPerSecond = (p1 - p0) / elapsed;
    const storedPerSecond = (s1 - s0) / elapsed;
    const computeCpuPercent = ((cpu.user + cpu.system) / 1e6 / elapsed) * 100;
    log(
      `  printer wrote ${producedPerSecond.toFixed(0)} lines/s; collection stored ${storedPerSecond.toFixed(0)} lines/s over ${elapsed.toFixed(1)} s (${(p1 + 1 - s1).toLocaleString('en')} printed lines not stored at the end, behind or rotated away); this process (compute) used ${computeCpuPercent.toFixed(0)}% of a CPU`,
    );

    // 2. Collection's own ceiling: compute away while the printer goes on (a backlog kept under
    // what json-file's 3 x 10 MB hold), the printer paused, compute back: how fast the backlog goes.
    await compute.stop();
    const backlogMs = Math.min(5000, (150_000 / Math.max(producedPerSecond, 1)) * 1000);
    await sleep(backlogMs);
    await docker.getContainer(container.Id).pause();
    // Where collection stopped (its cursor), and the last line there is to collect.
    const cursorOf = async () => (await admin.query(`select ts from compute.log_cursors where key = $1`, [container.Id])).rows[0]?.ts as string;
    const stoppedAt = await cursorOf();
    const tail = (await docker.getContainer(container.Id).logs({ stdout: true, tail: 1, timestamps: true })).toString('latin1');
    const lastTs = /(\d{4}-\d\d-\d\dT[\d:.]+Z)/.exec(tail)![1]!;
    compute = await start(readConfig(env));
    let firstAt = 0;
    for (;;) {
      const at = await cursorOf();
      if (!firstAt && at !== stoppedAt) firstAt = performance.now();
      if (at >= lastTs) break;
      if (firstAt && performance.now() - firstAt > 240_000) throw new Error('the backlog was not drained within 4 minutes');
      await sleep(20);
    }
    const drainSeconds = (performance.now() - firstAt) / 1000;
    const backlog = Number(
      (
        await admin.query(`select count(*) as n from compute.log_lines where service_id = $1 and ts > $2::timestamptz`, [
          serviceId,
          `${stoppedAt.slice(0, 26)}Z`,
        ])
      ).rows[0].n,
    );
    const drainPerSecond = backlog / drainSeconds;
    log(
      `  a backlog of ${backlog.toLocaleString('en')} lines (compute away ${(backlogMs / 1000).toFixed(1)} s, then the printer paused): collected in ${drainSeconds.toFixed(2)} s, ${drainPerSecond.toFixed(0)} lines/s`,
    );
    await docker
      .getContainer(container.Id)
      .unpause()
      .then(() => docker.getContainer(container.Id).stop({ t: 0 }))
      .catch(() => undefined);

    // 2. History over a million lines of one service, the last 24 hours.
    const knex = createDb(db.urls.compute, 'compute');
    const store = new KnexLogStore(knex);
    const created2 = await fetch(base(), {
      method: 'POST',
      headers: { [IDENTITY_HEADER]: identity, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'history' }),
    });
    if (created2.status !== 201) throw new Error(`create: ${created2.status} ${await created2.text()}`);
    const historyId = ((await created2.json()) as { id: string }).id;
    const now = Date.now();
    const i0 = performance.now();
    const batch = 10_000;
    for (let at = 0; at < total; at += batch) {
      const lines: StoredLine[] = [];
      for (let i = at; i < Math.min(total, at + batch); i++) {
        lines.push({
          serviceId: historyId,
          ts: timestampOf(new Date(now - 86_400_000 + Math.floor((i * 86_400_000) / total))),
          replica: String(i % 3),
          deploymentId: null,
          stream: i % 5 === 0 ? 'stderr' : 'stdout',
          message: i % 1000 === 0 ? `GET /orders/${i} 500 needle in ${i % 97} ms` : `GET /orders/${i} 200 in ${i % 97} ms user=${i % 1009}`,
        });
      }
      await store.append(lines, []);
    }
    const insertPerSecond = total / ((performance.now() - i0) / 1000);
    await admin.query('vacuum analyze compute.log_lines');
    await knex.destroy();
    log(
      `  stored ${total} lines of one service over 24 h through the store: ${insertPerSecond.toFixed(0)} lines/s (batches of ${batch}, one transaction each)`,
    );

    const history = `${base()}/${historyId}/logs/history`;
    const timed = async (label: string, url: string, n: number, check: (body: any) => boolean) => {
      for (let i = 0; i < 10; i++) await get(agent, url, identity); // warm-up
      const ms: number[] = [];
      for (let i = 0; i < n; i++) {
        const r = await get(agent, url, identity);
        if (r.status !== 200 || !check(r.body)) throw new Error(`${label}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
        ms.push(r.ms);
      }
      ms.sort((a, b) => a - b);
      log(
        `  history ${label.padEnd(42)} p50 ${percentile(ms, 0.5).toFixed(2).padStart(7)} ms, p99 ${percentile(ms, 0.99).toFixed(2).padStart(7)} ms (${n} requests)`,
      );
      return { p50: percentile(ms, 0.5), p99: percentile(ms, 0.99) };
    };
    const results: Record<string, { p50: number; p99: number }> = {};
    results.default = await timed('default (last hour, 100 lines)', history, requests, (b) => b.items.length === 100);
    results.page5000 = await timed('limit=5000', `${history}?limit=5000`, Math.ceil(requests / 4), (b) => b.items.length === 5000);
    // Deep in a 24-hour range: the page after 200,000 lines, through the cursor.
    const from = new Date(now - 86_400_000).toISOString();
    let cursor: string | null = null;
    for (let i = 0; i < 40; i++) {
      const r: { body: { next_cursor: string | null } } = await get(agent, `${history}?start=${from}&limit=5000${cursor ? `&cursor=${cursor}` : ''}`, identity);
      cursor = r.body.next_cursor;
    }
    results.deep = await timed(
      '24 h range, 100 lines after 200,000 (cursor)',
      `${history}?start=${from}&limit=100&cursor=${cursor}`,
      requests,
      (b) => b.items.length === 100,
    );
    results.search = await timed(
      '24 h range, q matching 1 line in 1,000',
      `${history}?start=${from}&q=needle`,
      Math.ceil(requests / 10),
      (b) => b.items.length === 100,
    );
    return {
      collection: { producedPerSecond, storedPerSecond, notStored: p1 + 1 - s1, drainPerSecond, computeCpuPercent },
      history: {
        lines: total,
        insertPerSecond,
        p50: Object.fromEntries(Object.entries(results).map(([k, v]) => [k, v.p50])),
        p99: Object.fromEntries(Object.entries(results).map(([k, v]) => [k, v.p99])),
      },
    };
  } finally {
    agent.destroy();
    await compute.stop().catch(() => undefined);
    await admin.end().catch(() => undefined);
    await removeVpcObjects(vpcId).catch(() => undefined);
    await db.drop().catch(() => undefined);
    if (!opts.infra) await infra.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  benchLogs().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`logs bench failed: ${(err as Error).stack ?? err}`);
      process.exit(1);
    },
  );
}
