// Every service's /readyz and /metrics, served by startService: a real PostgreSQL, the
// suite's NATS behind a link the test cuts, and a route of its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { createTestDatabase, infra, parsePrometheusText, readyz as readyzOf, sampleValue, scrape, socketLink, until, type TestDatabase } from '@pier/testing';
import {
  createOutboxTable,
  defineRoute,
  generateIdentityKeys,
  importIdentityKey,
  signIdentity,
  IDENTITY_HEADER,
  startService,
  writeEvent,
  type RunningService,
} from '../src/index.ts';

describe('startService: /readyz and /metrics', () => {
  let t: TestDatabase;
  let running: RunningService;
  let url: string;
  let token: string;
  let clusterUp = true;
  const nats = new URL(infra().natsUrl);
  const link = socketLink({ host: nats.hostname, port: Number(nats.port) });
  const workspaceId = randomUUID();

  beforeAll(async () => {
    t = await createTestDatabase(infra().postgresAdminUrl);
    await link.up();
    const keys = await generateIdentityKeys();
    token = await signIdentity(
      await importIdentityKey(keys.privateJwk),
      { kind: 'user', subject: randomUUID(), email: 'o@example.test', role: 'owner', workspaceId, vpcId: randomUUID() },
      600,
    );
    running = await startService({
      name: 'compute',
      config: {
        PIER_DATABASE_URL: t.urls.compute,
        PIER_NATS_URL: `nats://${link.address}`,
        PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
        PIER_BIND_HOST: '127.0.0.1',
        PIER_LOG_LEVEL: 'silent',
      },
      httpPort: 0,
      schema: 'compute',
      migrations: [{ name: '0001_outbox', up: createOutboxTable, down: (k) => k.schema.dropTable('outbox') }],
      wire: async ({ db, relay }) => ({
        routes: [
          defineRoute({
            method: 'get',
            path: '/api/v1/workspaces/{workspaceID}/things/{thingID}',
            summary: 'a thing',
            tag: 'things',
            access: 'Member',
            params: z.object({ workspaceID: z.string(), thingID: z.string() }),
            responses: { 200: { description: 'the thing' } },
            handler: async ({ params }) => {
              await writeEvent(db, { kind: 'thing.read', workspaceId: params.workspaceID, resourceId: params.thingID, data: {} });
              relay.poke();
              return { status: params.thingID === 'missing' ? 404 : 200, body: { id: params.thingID } };
            },
          }),
        ],
        checks: {
          cluster: async () => {
            if (!clusterUp) throw new Error('cluster unreachable');
          },
        },
      }),
    });
    url = `http://127.0.0.1:${running.httpPort}`;
  });

  afterAll(async () => {
    await running?.stop();
    await link.down();
    await t?.drop();
  });

  const readyz = () => readyzOf(url);
  const get = (path: string) => fetch(url + path, { headers: { [IDENTITY_HEADER]: token } });

  it('says ready, naming each dependency; /healthz stays the liveness answer', async () => {
    expect(await readyz()).toEqual({
      status: 200,
      body: { status: 'ready', service: 'compute', checks: { database: { ok: true }, nats: { ok: true }, cluster: { ok: true } } },
    });
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });

  it('counts requests by route template and status, never by raw path', async () => {
    expect((await get(`/api/v1/workspaces/${workspaceId}/things/a1`)).status).toBe(200);
    expect((await get(`/api/v1/workspaces/${workspaceId}/things/a2`)).status).toBe(200);
    expect((await get(`/api/v1/workspaces/${workspaceId}/things/missing`)).status).toBe(404);
    expect((await get('/no/such/path')).status).toBe(404);
    const samples = await scrape(url);
    const route = '/api/v1/workspaces/{workspaceID}/things/{thingID}';
    const count = (labels: Record<string, string>) => sampleValue(samples, 'pier_http_request_duration_seconds_count', labels);
    expect(count({ method: 'GET', route, status: '200', service: 'compute' })).toBe(2);
    expect(count({ method: 'GET', route, status: '404' })).toBe(1);
    expect(count({ method: 'GET', route: '(unmatched)', status: '404' })).toBe(1);
    expect(count({ route: '/readyz', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(samples, 'pier_http_request_duration_seconds_bucket', { route, status: '200', le: '+Inf' })).toBe(2);
    // No series carries a raw path.
    expect(samples.some((s) => (s.labels.route ?? '').includes(workspaceId))).toBe(false);
    // The pool, the outbox and the process.
    for (const state of ['used', 'free', 'pending']) expect(sampleValue(samples, 'pier_db_pool_connections', { state })).toBeGreaterThanOrEqual(0);
    expect(
      sampleValue(samples, 'pier_db_pool_connections', { state: 'free' })! + sampleValue(samples, 'pier_db_pool_connections', { state: 'used' })!,
    ).toBeGreaterThan(0);
    expect(sampleValue(samples, 'pier_outbox_backlog_rows')).toBeGreaterThanOrEqual(0);
    expect(sampleValue(samples, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sampleValue(samples, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
  });

  it('says not_ready naming NATS while it is unreachable, shows the outbox backlog growing old, and recovers', async () => {
    await link.down();
    const down = await until(readyz, (r) => r.status === 503, 20_000);
    expect(down.body.status).toBe('not_ready');
    expect(down.body.checks.nats!.ok).toBe(false);
    expect(down.body.checks.nats!.error).toMatch(/\S/);
    expect(down.body.checks.database).toEqual({ ok: true });
    expect(down.body.checks.cluster).toEqual({ ok: true });

    expect((await get(`/api/v1/workspaces/${workspaceId}/things/held`)).status).toBe(200);
    const held = await until(
      () => scrape(url),
      (s) => sampleValue(s, 'pier_outbox_oldest_unpublished_seconds')! >= 1,
      20_000,
    );
    expect(sampleValue(held, 'pier_outbox_backlog_rows')).toBeGreaterThanOrEqual(1);

    await link.up();
    const back = await until(readyz, (r) => r.status === 200, 30_000);
    expect(back.body.checks.nats).toEqual({ ok: true });
    const drained = await until(
      () => scrape(url),
      (s) => sampleValue(s, 'pier_outbox_backlog_rows') === 0,
      30_000,
    );
    expect(sampleValue(drained, 'pier_outbox_oldest_unpublished_seconds')).toBe(0);
  });

  it("names the service's own failing check", async () => {
    clusterUp = false;
    const r = await readyz();
    expect(r.status).toBe(503);
    expect(r.body.checks.cluster).toEqual({ ok: false, error: 'cluster unreachable' });
    clusterUp = true;
    expect((await readyz()).status).toBe(200);
  });

  it('parses the exposition strictly', () => {
    expect(() => parsePrometheusText('good_total{a="b"} 1\n')).not.toThrow();
    expect(() => parsePrometheusText('bad line here\n')).toThrow(/not a Prometheus sample/);
  });
});
