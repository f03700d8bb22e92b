// Service metrics for real: compute on the Docker engine runs a pier/tiny-http service
// behind a real edge (Caddy); requests sent through the edge, as users send them, show in
// GET metrics as requests per second, status classes and latency, and the replica's CPU
// and memory come from the Engine's stats; a restart of compute goes on from where counting
// stopped (nothing lost, nothing twice). Reads every 500 ms, writes every 500 ms.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEdge } from '@pier/testing';
import { startCompute, stopWithEdge, until, TINY_HTTP, type Compute } from './support.ts';

const edge = testEdge();
let c: Compute;
let web: any;
let host: string;

beforeAll(async () => {
  c = await startCompute({ ...edge.env, PIER_COMPUTE_METRICS_SAMPLE_MS: '500', PIER_COMPUTE_METRICS_FLUSH_MS: '500' });
  web = (await c.post(c.base, { name: 'web', image: TINY_HTTP, health_check_path: '/healthz' })).body;
  await until(
    () => c.get(`${c.base}/${web.id}`).then((r) => r.body),
    (s) => s.status === 'running',
    60_000,
  );
  host = new URL(web.url).hostname;
  await until(
    () => edge.get(host).catch(() => ({ status: 0 })),
    (r) => r.status === 200,
  );
}, 120_000);

afterAll(() => stopWithEdge(c, edge), 60_000);

const metricsPath = (id: string, window?: string) => `${c.base}/${id}/metrics${window ? `?window=${window}` : ''}`;

describe('service metrics on docker', () => {
  it('counts the requests the edge answered, by status class, with their latency, and reads CPU and memory', async () => {
    const before = (await c.get(metricsPath(web.id))).body.totals.requests ?? 0;
    for (let i = 0; i < 30; i++) expect((await edge.get(host, '/')).status).toBe(200);
    for (let i = 0; i < 6; i++) expect((await edge.get(host, '/missing')).status).toBe(404);
    const m = await until(
      () => c.get(metricsPath(web.id)).then((r) => r.body),
      (b) => (b.totals.requests ?? 0) - before >= 36,
      20_000,
    );
    expect(m.window).toBe('1h');
    expect(m.resolution_seconds).toBe(60);
    expect(m.points).toHaveLength(60);
    expect(m.requests_unavailable).toBeNull();
    expect(m.totals.responses['2xx']).toBeGreaterThanOrEqual(30);
    expect(m.totals.responses['4xx']).toBeGreaterThanOrEqual(6);
    expect(m.totals.latency_p50_ms).toBeGreaterThan(0);
    expect(m.totals.latency_p95_ms).toBeGreaterThanOrEqual(m.totals.latency_p50_ms);
    const counted = m.points.filter((p: any) => p.requests_per_second > 0);
    expect(counted.length).toBeGreaterThanOrEqual(1);
    expect(counted.every((p: any) => p.latency_p50_ms > 0 && p.responses['2xx'] + p.responses['4xx'] > 0)).toBe(true);
    expect(m.limits).toEqual({ cpu_cores: 0.25, memory_bytes: 256 * 1024 * 1024 });
    // The edge's own health checks and other hosts are nobody's: exactly what was sent, at most a few more from the readiness wait.
    expect(m.totals.requests - before).toBeLessThan(45);

    // Memory at once; CPU once a replica has been read twice (the rate between two reads) while
    // requests make it work (a CGI script: a process per request).
    const usage = await until(
      async () => {
        for (let i = 0; i < 10; i++) await edge.get(host, '/cgi-bin/env');
        return c.get(metricsPath(web.id)).then((r) => r.body);
      },
      (b) => b.points.some((p: any) => p.memory_bytes > 0) && b.points.some((p: any) => p.cpu_cores > 0),
      20_000,
    );
    const last = [...usage.points].reverse().find((p: any) => p.memory_bytes !== null);
    expect(last.memory_bytes).toBeGreaterThan(0);
    expect(last.memory_bytes).toBeLessThan(256 * 1024 * 1024);
  });

  it('answers the day in 15-minute steps and the week in hours', async () => {
    const day = (await c.get(metricsPath(web.id, '24h'))).body;
    expect(day.resolution_seconds).toBe(900);
    expect(day.points).toHaveLength(96);
    expect(day.totals.requests).toBeGreaterThanOrEqual(36);
    const week = (await c.get(metricsPath(web.id, '7d'))).body;
    expect(week.resolution_seconds).toBe(3600);
    expect(week.points).toHaveLength(168);
    // The current hour is not rolled up yet: the week reads its minutes.
    expect(week.totals.requests).toBeGreaterThanOrEqual(36);
  });

  it('counts what the edge answered while compute was away once, after its restart', async () => {
    const total = async () => (await c.get(metricsPath(web.id))).body.totals.requests as number;
    const settled = await until(total, (n) => n >= 36, 10_000);
    // Every flush has written by now: what a restart must neither lose nor count again.
    await new Promise((r) => setTimeout(r, 1500));
    const before = await total();
    // Stopped, its database kept (the harness's stop would drop it).
    await c.running!.stop();
    c.running = undefined as unknown as typeof c.running;
    // The edge answers them (a 503 when a new connection needs compute's route DNS): its requests all the same.
    for (let i = 0; i < 7; i++) expect((await edge.get(host, '/missing')).status).toBeGreaterThanOrEqual(400);
    await c.restart();
    await until(total, (n) => n >= before + 7, 20_000);
    await new Promise((r) => setTimeout(r, 2000));
    expect(await total()).toBe(before + 7);
    expect(settled).toBeGreaterThan(0);
  }, 60_000);

  it('refuses a bad window naming it, answers 404 for an unknown service, and lets a viewer read', async () => {
    const bad = await c.get(metricsPath(web.id, '2h'));
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ field: 'window' });
    expect(typeof bad.body.error).toBe('string');
    expect((await c.get(metricsPath('6f1c1a52-7d2e-4a8e-9d55-1f6f3d7d8a10'))).body.code).toBe('service_not_found');
    expect((await c.get(metricsPath(web.id), 'viewer')).status).toBe(200);
  });
});
