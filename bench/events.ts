/**
 * Events and webhooks benchmark (issue 31), section `events` of `pnpm bench`, on the whole
 * platform (test/support/platform-core.ts) with local webhook receivers:
 *   latency: a secret created through the gateway, one at a time; from its answer (the
 *   change and its outbox row are committed by then) to its `secret.created` webhook's
 *   arrival at a receiver on loopback; p50 and p99;
 *   fan-out: 10 endpoints subscribed to `bench.*`, and events committed to an outbox (the
 *   secrets service's, which its relay publishes as it does every event) at 1,000 a second
 *   for PIER_BENCH_EVENTS_SECONDS (10); how many are stored in the audit log and delivered
 *   to each endpoint each second, the delivery lag (occurred_at to arrival) p50/p99, and
 *   how long the deliveries take to drain: the stage that lags most is what falls behind first.
 * Env: PIER_BENCH_EVENTS_CREATES (100), PIER_BENCH_EVENTS_RATE (1000), PIER_BENCH_EVENTS_SECONDS (10).
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { eventSubject } from '@pier/kit';
import { startInfra, type Infra } from './infra.ts';
import { request } from './databases.ts';
import { startPlatformAt } from '../test/support/platform-core.ts';

const ENDPOINTS = 10;

interface Arrival {
  path: string;
  at: number;
  type: string;
  resourceId: string;
  occurredAt: string;
}

const percentile = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const ms = (x: number) => `${x.toFixed(0)} ms`;

export async function benchEvents(opts: { infra?: Infra; log?: (line: string) => void } = {}): Promise<void> {
  const log = opts.log ?? ((l: string) => console.log(l));
  const creates = Number(process.env.PIER_BENCH_EVENTS_CREATES ?? 100);
  const rate = Number(process.env.PIER_BENCH_EVENTS_RATE ?? 1000);
  const seconds = Number(process.env.PIER_BENCH_EVENTS_SECONDS ?? 10);

  // One receiver; each endpoint is a path of it. It answers at once, so what is measured is Pier's side.
  const arrivals: Arrival[] = [];
  const waiting = new Map<string, (at: number) => void>();
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { type: string; data: { resource: { id: string }; occurred_at: string } };
      arrivals.push({ path: req.url ?? '/', at, type: body.type, resourceId: body.data.resource.id, occurredAt: body.data.occurred_at });
      waiting.get(body.data.resource.id)?.(at);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;

  const infra = opts.infra ?? (await startInfra());
  const platform = await startPlatformAt({
    postgresAdminUrl: infra.postgresAdminUrl,
    natsUrl: infra.natsUrl,
    logLevel: 'warn',
    env: { events: { PIER_EVENTS_WEBHOOK_ALLOW_HTTP: 'true', PIER_EVENTS_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' } },
  });
  const db = new pg.Client({ connectionString: platform.database.adminUrl });
  await db.connect();
  const { token, workspaceId, vpcId } = platform.bootstrap;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const api = (method: string, path: string, body?: unknown) =>
    request(agent, new URL(`${platform.gatewayUrl}/api/v1/workspaces/${workspaceId}${path}`), token, method, body);
  try {
    log('\npier bench — events and webhooks (the whole platform on loopback; receivers answer at once)');

    // ---- latency: commit → webhook ----
    const hook = await api('POST', '/webhooks', { url: `${receiverUrl}/latency`, events: ['secret.created'], description: 'bench latency' });
    if (hook.status !== 201) throw new Error(`webhook create: ${hook.status} ${JSON.stringify(hook.body)}`);
    const latencies: number[] = [];
    for (let i = 0; i < creates; i++) {
      const res = await api('POST', `/vpcs/${vpcId}/secrets`, { name: `bench-${i}-${randomUUID().slice(0, 8)}`, values: { K: 'v' } });
      const answered = performance.now();
      if (res.status !== 201) throw new Error(`secret create: ${res.status} ${JSON.stringify(res.body)}`);
      const arrived = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no webhook for secret ${res.body.id} within 30 s`)), 30_000);
        waiting.set(res.body.id, (at) => {
          clearTimeout(timer);
          resolve(at);
        });
        const early = arrivals.find((a) => a.resourceId === res.body.id);
        if (early) waiting.get(res.body.id)!(early.at);
      });
      waiting.delete(res.body.id);
      latencies.push(arrived - answered);
    }
    log(
      `  secret created → its webhook arrives: p50 ${ms(percentile(latencies, 50))}, p99 ${ms(percentile(latencies, 99))} (${creates} creates, one at a time)`,
    );
    await api('DELETE', `/webhooks/${hook.body.id}`);

    // ---- fan-out: 1,000 events a second to 10 endpoints ----
    for (let e = 0; e < ENDPOINTS; e++) {
      const r = await api('POST', '/webhooks', { url: `${receiverUrl}/fan-${e}`, events: ['bench.*'], description: `bench fan-out ${e}` });
      if (r.status !== 201) throw new Error(`webhook create: ${r.status} ${JSON.stringify(r.body)}`);
    }
    arrivals.length = 0;
    const total = rate * seconds;
    const perTick = Math.max(1, Math.round(rate / 10));
    const started = performance.now();
    const storedAt: number[] = [];
    const stored = async () => Number((await db.query('select count(*)::int as n from events.events where type = $1', ['bench.tick'])).rows[0].n);
    let written = 0;
    // Committed in batches every 100 ms, as many services' requests would be.
    while (written < total) {
      const due = Math.min(total, Math.round(((performance.now() - started) / 1000) * rate) + perTick);
      const rows = [];
      for (; written < due; written++) {
        const id = randomUUID();
        const event = { kind: 'bench.tick', workspaceId, vpcId, resourceId: id, data: { n: written } };
        rows.push({
          subject: eventSubject(event),
          payload: {
            id: randomUUID(),
            kind: event.kind,
            workspace_id: workspaceId,
            vpc_id: vpcId,
            resource_id: id,
            resource: { kind: 'bench', id, name: null },
            actor: null,
            source_ip: null,
            data: event.data,
            occurred_at: new Date().toISOString(),
          },
        });
      }
      if (rows.length) {
        await db.query(`insert into secrets.outbox (subject, kind, payload) select s, 'bench.tick', p from unnest($1::text[], $2::jsonb[]) as t(s, p)`, [
          rows.map((r) => r.subject),
          rows.map((r) => JSON.stringify(r.payload)),
        ]);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const writeSeconds = (performance.now() - started) / 1000;
    const deadline = performance.now() + 300_000;
    let lastStored = 0;
    for (;;) {
      lastStored = await stored();
      if (storedAt.length === 0 && lastStored >= total) storedAt.push(performance.now());
      if (arrivals.length >= total * ENDPOINTS || performance.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const drained = (performance.now() - started) / 1000;
    const lags = arrivals.map((a) => Date.now() - performance.now() + a.at - Date.parse(a.occurredAt));
    const perEndpoint = Array.from({ length: ENDPOINTS }, (_, e) => arrivals.filter((a) => a.path === `/fan-${e}`).length);
    log(
      `  fan-out: ${total} events committed in ${writeSeconds.toFixed(1)} s (${(total / writeSeconds).toFixed(0)}/s) to ${ENDPOINTS} endpoints: ` +
        `stored in the audit log ${lastStored}/${total}${storedAt[0] ? ` after ${((storedAt[0] - started) / 1000).toFixed(1)} s` : ''}; ` +
        `delivered ${arrivals.length}/${total * ENDPOINTS} after ${drained.toFixed(1)} s (${(arrivals.length / drained).toFixed(0)}/s; per endpoint ${Math.min(...perEndpoint)}–${Math.max(...perEndpoint)})`,
    );
    log(`  fan-out delivery lag (occurred_at → arrival): p50 ${ms(percentile(lags, 50))}, p99 ${ms(percentile(lags, 99))}`);
  } finally {
    await db.end().catch(() => undefined);
    agent.destroy();
    await platform.stop();
    await new Promise((r) => receiver.close(r));
    if (!opts.infra) await infra.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  benchEvents().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
