// Service metrics without a cluster: the latency histogram's percentiles, the per-minute
// sums the collector keeps, the series a window answers (steps, nulls where nothing was
// read or counted), and the store on a real PostgreSQL — rows of one minute written by two
// instances add, the rollup makes each hour once (also when two run at once), and pruning
// keeps what the windows read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createDb, migrate, type Knex } from '@pier/kit';
import { createTestDatabase, infra } from '@pier/testing';
import { bucketOf, countOf, quantile, record, type Histogram } from '../src/domain/metrics/latency-histogram.ts';
import { MetricMinutes, statusClass } from '../src/domain/metrics/metric-minutes.ts';
import { seriesOf, windowRange } from '../src/domain/metrics/metrics-series.ts';
import { KnexMetricsStore } from '../src/store/metrics-store.ts';
import { migrations, SCHEMA } from '../src/store/migrations.ts';
import type { TestDatabase } from './support.ts';

const MIN = 60_000;
const HOUR = 3_600_000;
const T0 = Date.parse('2026-03-02T10:00:00Z');

describe('latency histogram', () => {
  it('answers percentiles within 10% of the true value', () => {
    const h: Histogram = {};
    const samples = Array.from({ length: 1000 }, (_, i) => 1 + i * 0.5); // 1 ms .. 500.5 ms
    for (const s of samples) record(h, s);
    const p50 = quantile(h, 0.5)!;
    const p95 = quantile(h, 0.95)!;
    expect(Math.abs(p50 - 250.5) / 250.5).toBeLessThan(0.1);
    expect(Math.abs(p95 - 475.5) / 475.5).toBeLessThan(0.1);
    expect(quantile({}, 0.5)).toBeNull();
  });

  it('puts the tiny and the enormous in the end buckets', () => {
    expect(bucketOf(0)).toBe(0);
    expect(bucketOf(0.4)).toBe(0);
    expect(bucketOf(10_000_000)).toBe(80);
    expect(bucketOf(0.6)).toBe(1);
  });
});

describe('per-minute sums', () => {
  it('counts requests by minute and status class, and sums replicas per read', () => {
    const m = new MetricMinutes();
    const svc = randomUUID();
    m.request(svc, { status: 200, durationMs: 5, at: T0 + 1000 });
    m.request(svc, { status: 404, durationMs: 5, at: T0 + 2000 });
    m.request(svc, { status: 503, durationMs: 50, at: T0 + MIN + 1 });
    m.request(svc, { status: 101, durationMs: 1, at: T0 + MIN + 2 });
    m.usage(
      [
        { serviceId: svc, replica: 'a', cpuCores: 0.1, memoryBytes: 100 },
        { serviceId: svc, replica: 'b', cpuCores: 0.2, memoryBytes: 300 },
      ],
      T0 + 5000,
    );
    // A replica with no rate yet: no CPU sample from this read, memory still counted.
    m.usage(
      [
        { serviceId: svc, replica: 'a', cpuCores: 0.1, memoryBytes: 100 },
        { serviceId: svc, replica: 'c', cpuCores: null, memoryBytes: 50 },
      ],
      T0 + 20_000,
    );
    const rows = m.take().sort((a, b) => a.start.getTime() - b.start.getTime());
    expect(m.size).toBe(0);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({ requests: 2, responses: { '2xx': 1, '3xx': 0, '4xx': 1, '5xx': 0 }, cpuSamples: 1, memorySamples: 2, memorySum: 550 });
    expect(rows[0]!.cpuSum).toBeCloseTo(0.3);
    expect(rows[1]).toMatchObject({ requests: 2, responses: { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 1 }, cpuSamples: 0 });
    // The WebSocket's 101 is a request with no latency (its duration is the session's).
    expect(countOf(rows[1]!.latency)).toBe(1);
    expect(statusClass(301)).toBe('3xx');
    expect(statusClass(101)).toBeNull();
  });
});

describe('the series of a window', () => {
  const svc = randomUUID();
  const now = new Date(T0 + 30 * MIN + 10_000);

  it('has one point per step, nulls where nothing was read or counted, rates over the counted seconds', () => {
    const m = new MetricMinutes();
    for (let i = 0; i < 120; i++) m.request(svc, { status: i % 10 === 0 ? 500 : 200, durationMs: 10, at: T0 + 29 * MIN + i * 100 });
    m.usage([{ serviceId: svc, replica: 'a', cpuCores: 0.05, memoryBytes: 1000 }], T0 + 29 * MIN);
    m.usage([{ serviceId: svc, replica: 'a', cpuCores: 0.15, memoryBytes: 3000 }], T0 + 29 * MIN + 30_000);
    const rows = m.take();
    const covered = [new Date(T0 + 28 * MIN), new Date(T0 + 29 * MIN)];
    const s = seriesOf('1h', now, rows, covered, true);
    expect(s.stepSeconds).toBe(60);
    expect(s.points).toHaveLength(60);
    expect(s.to.getTime()).toBe(T0 + 31 * MIN);
    const at = (t: number) => s.points.find((p) => p.at.getTime() === t)!;
    expect(at(T0 + 29 * MIN)).toMatchObject({ cpuCores: 0.1, memoryBytes: 2000, requestsPerSecond: 2, responses: { '2xx': 108, '5xx': 12 } });
    expect(at(T0 + 29 * MIN).latencyP50Ms).toBeGreaterThan(9);
    // Counted, and nothing came: zero, not null.
    expect(at(T0 + 28 * MIN)).toMatchObject({
      cpuCores: null,
      requestsPerSecond: 0,
      responses: { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 },
      latencyP50Ms: null,
    });
    // Nobody counted: null.
    expect(at(T0 + 10 * MIN)).toMatchObject({ cpuCores: null, memoryBytes: null, requestsPerSecond: null, responses: null });
    expect(s.totals).toMatchObject({ requests: 120, responses: { '2xx': 108, '5xx': 12 } });
  });

  it('says nothing of requests where they are not counted (kubernetes)', () => {
    const m = new MetricMinutes();
    m.usage([{ serviceId: svc, replica: 'p', cpuCores: 0.2, memoryBytes: 10 }], T0 + 29 * MIN);
    const s = seriesOf('1h', now, m.take(), [], false);
    expect(s.points.every((p) => p.requestsPerSecond === null && p.responses === null)).toBe(true);
    expect(s.totals.requests).toBeNull();
    expect(s.points.find((p) => p.cpuCores !== null)!.cpuCores).toBe(0.2);
  });

  it('steps 15 minutes over a day and an hour over a week', () => {
    const day = windowRange('24h', now);
    expect(seriesOf('24h', now, [], [], true).points).toHaveLength(96);
    expect(day.to.getTime()).toBe(T0 + 45 * MIN);
    const week = seriesOf('7d', now, [], [], true);
    expect(week.points).toHaveLength(168);
    expect(week.to.getTime()).toBe(T0 + HOUR);
  });
});

describe('the metrics store', () => {
  let db: TestDatabase;
  let knex: Knex;
  let store: KnexMetricsStore;

  beforeAll(async () => {
    db = await createTestDatabase(infra().postgresAdminUrl);
    knex = createDb(db.urls.compute, SCHEMA);
    await migrate(knex, SCHEMA, migrations, 'up');
    store = new KnexMetricsStore(knex);
  }, 60_000);

  afterAll(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  const minuteRows = (svc: string, start: number, requests: number) => {
    const m = new MetricMinutes();
    for (let i = 0; i < requests; i++) m.request(svc, { status: 200, durationMs: 20, at: start + i });
    m.usage([{ serviceId: svc, replica: 'x', cpuCores: 0.5, memoryBytes: 1 << 20 }], start);
    return m.take();
  };

  it('adds the rows two instances write for one minute', async () => {
    const svc = randomUUID();
    await store.add(minuteRows(svc, T0, 3));
    await store.add(minuteRows(svc, T0, 4));
    await store.cover([new Date(T0), new Date(T0)]);
    const rows = await store.minutes(svc, new Date(T0), new Date(T0 + MIN));
    const s = seriesOf('1h', new Date(T0 + 30_000), rows, await store.covered(new Date(T0 - HOUR), new Date(T0 + HOUR)), true);
    const point = s.points.find((p) => p.at.getTime() === T0)!;
    expect(point.responses!['2xx']).toBe(7);
    expect(point.cpuCores).toBe(0.5); // an average of the two reads, not their sum
    expect(point.memoryBytes).toBe(1 << 20);
  });

  it('rolls each hour up once, also with two rollups at once, and the week reads hours and minutes not rolled yet', async () => {
    const svc = randomUUID();
    for (let i = 0; i < 60; i += 10) await store.add(minuteRows(svc, T0 + i * MIN, 2));
    await store.add(minuteRows(svc, T0 + HOUR + 5 * MIN, 5));
    const [a, b] = await Promise.all([store.rollUp(new Date(T0 + HOUR)), store.rollUp(new Date(T0 + HOUR))]);
    expect(a + b).toBeGreaterThanOrEqual(1);
    expect(await store.rollUp(new Date(T0 + HOUR))).toBe(0);
    const week = await store.hours(svc, new Date(T0 - HOUR), new Date(T0 + 2 * HOUR));
    const hourRows = week.filter((r) => r.bucketSeconds === 3600);
    expect(hourRows.reduce((n, r) => n + r.requests, 0)).toBe(12);
    expect(week.filter((r) => r.bucketSeconds === 60).map((r) => r.requests)).toEqual([5]);
    // The day still reads the hour's minutes, rolled or not.
    expect((await store.minutes(svc, new Date(T0), new Date(T0 + 2 * HOUR))).reduce((n, r) => n + r.requests, 0)).toBe(17);
    const s = seriesOf('7d', new Date(T0 + HOUR + 10 * MIN), week, [], true);
    expect(s.points.find((p) => p.at.getTime() === T0)!.responses!['2xx']).toBe(12);
    expect(s.points.find((p) => p.at.getTime() === T0)!.cpuCores).toBe(0.5);
  });

  it('prunes minutes past a day and hours past a week, keeping what is still read', async () => {
    const svc = randomUUID();
    const old = T0 - 9 * 24 * HOUR;
    await store.add(minuteRows(svc, old, 1));
    await store.add(minuteRows(svc, T0 - 2 * HOUR, 1));
    await store.cover([new Date(old), new Date(T0 - 2 * HOUR)]);
    await store.rollUp(new Date(T0 - HOUR));
    const pruned = await store.prune(new Date(T0 - 25 * HOUR), new Date(T0 - 8 * 24 * HOUR));
    expect(pruned).toBeGreaterThanOrEqual(2);
    expect(await store.hours(svc, new Date(old - HOUR), new Date(old + HOUR))).toEqual([]);
    expect((await store.hours(svc, new Date(T0 - 3 * HOUR), new Date(T0))).map((r) => r.bucketSeconds)).toEqual([3600]);
    expect((await store.minutes(svc, new Date(T0 - 3 * HOUR), new Date(T0))).length).toBe(1);
    expect((await store.covered(new Date(old - HOUR), new Date(T0))).map((d) => d.getTime())).toEqual([T0 - 2 * HOUR]);
  });
});
