// Service logs on the real Docker engine and the real PostgreSQL: a worker of two replicas
// printing numbered lines to stdout and stderr, read recent, followed as server-sent
// events, kept in history across a rollout and a restart of compute, and expired.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, IDENTITY_HEADER } from '@pier/kit';
import { readEventStream } from '@pier/testing';
import { KnexLogStore } from '../src/store/log-store.ts';
import { timestampOf } from '../src/domain/logs/log-time.ts';
import { cleanDocker, startCompute, until, vpcContainers, type Compute } from './support.ts';

const IMAGE = 'pier/debian-base:bookworm';
const PRINTER = 'i=0; while :; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); sleep 0.2; done';
const LONG = 'head -c 40000 /dev/zero | tr "\\0" a; echo; echo after; exec sleep 100000';
const DAY = 86_400_000;

let c: Compute;
let printer: any;
let long: any;

interface Line {
  timestamp: string;
  replica: string;
  deployment_id: string | null;
  stream: 'stdout' | 'stderr';
  message: string;
}

const logsOf = (id: string, query = '', role: 'owner' | 'viewer' = 'owner') => c.get(`${c.base}/${id}/logs${query}`, role);
const historyOf = (id: string, query = '') => c.get(`${c.base}/${id}/logs/history${query}`);

/** Every stored line of the service in the last hour, page by page. */
async function allHistory(id: string, pageSize = 5000): Promise<Line[]> {
  const lines: Line[] = [];
  let cursor: string | null = null;
  do {
    const res = await historyOf(id, `?limit=${pageSize}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(res.status).toBe(200);
    lines.push(...res.body.items);
    cursor = res.body.next_cursor;
  } while (cursor);
  return lines;
}

/** The printed numbers of each (deployment, replica, stream), in the order stored. */
function sequences(lines: Line[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const l of lines) {
    const m = /^(out|err) (\d+)$/.exec(l.message);
    if (!m) continue;
    const key = `${l.deployment_id}/${l.replica}/${l.stream}`;
    (out.get(key) ?? out.set(key, []).get(key)!).push(Number(m[2]));
  }
  return out;
}

/** Each sequence holds 0..n once each: nothing lost, nothing twice. */
function expectWhole(seqs: Map<string, number[]>): void {
  for (const [key, numbers] of seqs) {
    const sorted = [...numbers].sort((a, b) => a - b);
    expect(sorted, key).toEqual(sorted.map((_, i) => i));
  }
}

beforeAll(async () => {
  // Level info: the access log is there to search for tokens.
  c = await startCompute({ PIER_LOG_LEVEL: 'info', PIER_COMPUTE_LOG_FLUSH_MS: '100', PIER_COMPUTE_LOG_SCAN_MS: '500', PIER_COMPUTE_SSE_KEEPALIVE_MS: '200' });
  const a = await c.post(c.base, { name: 'printer', service_type: 'worker', image: IMAGE, command: ['sh', '-c', PRINTER], min_replicas: 2 });
  const b = await c.post(c.base, { name: 'long', service_type: 'worker', image: IMAGE, command: ['sh', '-c', LONG] });
  expect([a.status, b.status]).toEqual([201, 201]);
  printer = a.body;
  long = b.body;
  for (const s of [printer, long]) {
    await until(
      () => c.get(`${c.base}/${s.id}`).then((r) => r.body.status),
      (st) => st === 'running',
    );
  }
  // Enough lines from both replicas to read.
  await until(
    () => logsOf(printer.id, '?limit=200').then((r) => r.body.items as Line[]),
    (items: Line[]) => ['0', '1'].every((r) => items.filter((l) => l.replica === r).length >= 70),
  );
}, 120_000);

afterAll(async () => {
  await c?.stop();
  if (c) await cleanDocker(c.vpcId);
}, 60_000);

describe('recent lines', () => {
  it('come from both replicas and both streams, oldest first, as the line shape says', async () => {
    const res = await logsOf(printer.id, '?limit=40');
    expect(res.status).toBe(200);
    const items: Line[] = res.body.items;
    expect(items).toHaveLength(40);
    expect(new Set(items.map((l) => l.replica))).toEqual(new Set(['0', '1']));
    expect(new Set(items.map((l) => l.stream))).toEqual(new Set(['stdout', 'stderr']));
    expect(items.map((l) => l.timestamp)).toEqual([...items.map((l) => l.timestamp)].sort());
    for (const l of items) {
      expect(Object.keys(l).sort()).toEqual(['deployment_id', 'message', 'replica', 'stream', 'timestamp']);
      expect(l.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      expect(l.deployment_id).toBe(printer.current_deployment_id);
      expect(l.message).toMatch(l.stream === 'stdout' ? /^out \d+$/ : /^err \d+$/);
    }
  });

  it('default to 100 lines, and take limit, replica and since', async () => {
    expect((await logsOf(printer.id)).body.items).toHaveLength(100);
    const three: Line[] = (await logsOf(printer.id, '?limit=3')).body.items;
    expect(three).toHaveLength(3);

    const one: Line[] = (await logsOf(printer.id, '?replica=1&limit=50')).body.items;
    expect(one.length).toBe(50);
    expect(one.every((l) => l.replica === '1')).toBe(true);

    const all: Line[] = (await logsOf(printer.id, '?limit=200')).body.items;
    const from = all[all.length - 40]!.timestamp;
    const since: Line[] = (await logsOf(printer.id, `?limit=5000&since=${from}`)).body.items;
    expect(since.length).toBeGreaterThanOrEqual(40);
    expect(since.length).toBeLessThan(all.length);
    expect(since.every((l) => l.timestamp >= from)).toBe(true);
    // A duration back from now.
    const before = new Date(Date.now() - 2000).toISOString();
    const recent: Line[] = (await logsOf(printer.id, '?limit=5000&since=1s')).body.items;
    expect(recent.length).toBeGreaterThan(0);
    expect(recent.every((l) => l.timestamp >= before)).toBe(true);
    expect(recent.length).toBeLessThan(since.length);
  });

  it('keep a line Docker split over 16 KiB whole', async () => {
    const items: Line[] = (await logsOf(long.id)).body.items;
    expect(items.map((l) => l.message.length)).toEqual([40_000, 5]);
    expect(items[0]!.message).toBe('a'.repeat(40_000));
    expect(items[1]!.message).toBe('after');
  });

  it('are readable by a Viewer', async () => {
    expect((await logsOf(printer.id, '?limit=1', 'viewer')).status).toBe(200);
    expect((await c.get(`${c.base}/${printer.id}/logs/history?limit=1`, 'viewer')).status).toBe(200);
  });
});

describe('bad queries are 400s naming the parameter', () => {
  it.each([
    ['logs', '?limit=0', 'limit'],
    ['logs', '?limit=5001', 'limit'],
    ['logs', '?limit=ten', 'limit'],
    ['logs', '?limit=1&limit=2', 'limit'],
    ['logs', '?since=yesterday', 'since'],
    ['logs', '?since=2025-13-45T00:00:00Z', 'since'],
    ['logs', '?follow=yes', 'follow'],
    ['logs', '?replica=Not_A_Replica', 'replica'],
    ['logs/history', '?start=soon', 'start'],
    ['logs/history', '?end=15x', 'end'],
    ['logs/history', '?start=1h&end=2h', 'start'],
    ['logs/history', '?q=', 'q'],
    ['logs/history', `?q=${'x'.repeat(201)}`, 'q'],
    ['logs/history', '?limit=0', 'limit'],
    ['logs/history', '?cursor=bm90LWEtY3Vyc29y', 'cursor'],
  ])('%s%s', async (path, query, field) => {
    const res = await c.get(`${c.base}/${printer.id}/${path}${query}`);
    expect(res.status).toBe(400);
    expect(res.body.field).toBe(field);
    expect(res.body.error).toContain(field);
  });

  it('an unknown service is a 404', async () => {
    for (const path of ['logs', 'logs/history']) {
      const res = await c.get(`${c.base}/6f1c1a52-7d2e-4a8e-9d55-1f6f3d7d8a10/${path}`);
      expect(res).toMatchObject({ status: 404, body: { code: 'service_not_found' } });
    }
  });
});

describe('following', () => {
  it('streams the recent lines, then new ones from both replicas, as server-sent events', async () => {
    const controller = new AbortController();
    const asked = new Date().toISOString();
    const res = await fetch(`${c.url}${c.base}/${printer.id}/logs?follow=true&limit=5`, {
      headers: { [IDENTITY_HEADER]: await c.token('viewer'), accept: 'text/event-stream' },
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const read = await readEventStream(res, (r) => r.events.filter((e) => e.data.timestamp > asked).length >= 12);
    controller.abort();
    expect(read.events.every((e) => e.event === 'line')).toBe(true);
    const lines = read.events.map((e) => e.data as Line);
    // The recent lines come first, then the new ones: in time order within each replica's
    // stream. (Not "older than the request": the printer may print a line or two between
    // the request leaving here and compute reading the recent ones, on a busy machine.)
    const byStream = new Map<string, string[]>();
    for (const l of lines)
      (byStream.get(`${l.replica}/${l.stream}`) ?? byStream.set(`${l.replica}/${l.stream}`, []).get(`${l.replica}/${l.stream}`)!).push(l.timestamp);
    for (const ts of byStream.values()) expect(ts).toEqual([...ts].sort());
    const fresh = lines.filter((l) => l.timestamp > asked);
    expect(new Set(fresh.map((l) => l.replica))).toEqual(new Set(['0', '1']));
    expect(new Set(fresh.map((l) => l.stream))).toEqual(new Set(['stdout', 'stderr']));
    // Nothing twice where the recent lines end and the live ones begin.
    const ids = lines.map((l) => `${l.replica}/${l.stream}/${l.message}`);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('sends keep-alive comments while nothing is printed, and only the replica asked for', async () => {
    const controller = new AbortController();
    const res = await fetch(`${c.url}${c.base}/${printer.id}/logs?follow=true&replica=7`, {
      headers: { [IDENTITY_HEADER]: await c.token(), accept: 'text/event-stream' },
      signal: controller.signal,
    });
    const read = await readEventStream(res, (r) => r.comments.length >= 3, 5000);
    controller.abort();
    expect(read.comments.slice(0, 3)).toEqual(['keep-alive', 'keep-alive', 'keep-alive']);
    expect(read.events).toEqual([]);
  });
});

describe('history', () => {
  it('holds what both replicas printed, with q, replica and pages that neither skip nor repeat', async () => {
    await until(
      () => allHistory(printer.id),
      (lines) => lines.length >= 100,
    );
    const lines = await allHistory(printer.id);
    expect(new Set(lines.map((l) => `${l.replica}/${l.stream}`))).toEqual(new Set(['0/stdout', '0/stderr', '1/stdout', '1/stderr']));
    expect(lines.map((l) => l.timestamp)).toEqual([...lines.map((l) => l.timestamp)].sort());

    const errOne: Line[] = (await historyOf(printer.id, '?q=err%201&limit=5000')).body.items;
    expect(errOne.length).toBeGreaterThan(0);
    expect(errOne.every((l) => l.message.includes('err 1') && l.stream === 'stderr')).toBe(true);
    const zero: Line[] = (await historyOf(printer.id, '?replica=0&limit=5000')).body.items;
    expect(zero.length).toBeGreaterThan(0);
    expect(zero.every((l) => l.replica === '0')).toBe(true);

    // Small pages over a closed range read the same lines as one big page.
    const end = lines[80]!.timestamp;
    const range = `start=${lines[0]!.timestamp}&end=${end}`;
    const whole: Line[] = (await historyOf(printer.id, `?${range}&limit=5000`)).body.items;
    expect(whole.length).toBeGreaterThanOrEqual(80);
    const paged: Line[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await historyOf(printer.id, `?${range}&limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.body.items.length).toBeLessThanOrEqual(7);
      paged.push(...page.body.items);
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(paged).toEqual(whole);
    expect(whole.every((l) => l.timestamp >= lines[0]!.timestamp && l.timestamp < end)).toBe(true);
  });

  it('keeps the lines of replaced containers after a restart and a rollback', async () => {
    const first = printer.current_deployment_id as string;
    const restarted = await c.post(`${c.base}/${printer.id}/restart`);
    expect(restarted.status).toBe(202);
    await until(
      () => c.get(`${c.base}/${printer.id}`).then((r) => r.body.status),
      (s) => s === 'running',
    );
    const rolledBack = await c.post(`${c.base}/${printer.id}/rollback`, { deployment_id: first });
    expect(rolledBack.status).toBe(202);
    const third = rolledBack.body.deployment.id as string;
    await until(
      () => c.get(`${c.base}/${printer.id}`).then((r) => r.body.status),
      (s) => s === 'running',
    );
    // The old containers are gone; their lines are not.
    const containers = await vpcContainers(c.vpcId, printer.id);
    expect(containers.map((x) => x.Labels['pier.deployment'])).toEqual([third, third]);
    await until(
      () => logsOf(printer.id, '?limit=20').then((r) => r.body.items as Line[]),
      (items) => items.length === 20 && items.every((l) => l.deployment_id === third),
    );
    const lines = await until(
      () => allHistory(printer.id),
      (ls) => ls.some((l) => l.deployment_id === third),
    );
    const byDeployment = new Set(lines.map((l) => l.deployment_id));
    expect(byDeployment).toEqual(new Set([first, restarted.body.deployment.id, third]));
    expectWhole(sequences(lines));
  });

  it('loses and repeats nothing across a restart of compute', async () => {
    const before = sequences(await allHistory(printer.id));
    await c.restart();
    // Printed while compute was away, and after: collected from where it stopped.
    const third = (await c.get(`${c.base}/${printer.id}`)).body.current_deployment_id;
    const key = `${third}/0/stdout`;
    const lines = await until(
      () => allHistory(printer.id),
      (ls) => (sequences(ls).get(key)?.length ?? 0) > (before.get(key)?.length ?? 0) + 15,
    );
    const after = sequences(lines);
    expectWhole(after);
    for (const [k, numbers] of before) expect(after.get(k)!.length, k).toBeGreaterThanOrEqual(numbers.length);
    // The long line is stored once.
    const longLines: Line[] = (await historyOf(long.id)).body.items;
    expect(longLines.map((l) => l.message.length)).toEqual([40_000, 5]);
  }, 90_000);
});

describe('retention', () => {
  it('hides lines past it, and drops their days at start and every hour; days ahead are ready', async () => {
    const db = createDb(c.db.urls.compute, 'compute');
    try {
      const store = new KnexLogStore(db);
      const at = (daysAgo: number) => timestampOf(new Date(Date.now() - daysAgo * DAY));
      const line = (daysAgo: number) => ({
        serviceId: printer.id,
        ts: at(daysAgo),
        replica: '0',
        deploymentId: null,
        stream: 'stdout' as const,
        message: `${daysAgo} days ago`,
      });
      await store.append([line(10), line(3)], []);
      const days = async () =>
        (
          await db.raw(`select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'log_lines'::regclass order by 1`)
        ).rows.map((r: { relname: string }) => r.relname);
      const table = (daysAgo: number) => `log_lines_${at(daysAgo).slice(0, 10).replace(/-/g, '')}`;
      expect(await days()).toEqual(expect.arrayContaining([table(10), table(3), table(0), table(-1), table(-2)]));

      // Retention 7 days (the default): the 10-day-old line is never answered.
      const old: Line[] = (await historyOf(printer.id, '?start=30d&q=days%20ago')).body.items;
      expect(old.map((l) => l.message)).toEqual(['3 days ago']);

      await c.restart({ PIER_COMPUTE_LOG_RETENTION_DAYS: '2' });
      const left = await until(days, (d) => !d.includes(table(3)), 10_000);
      expect(left).not.toContain(table(10));
      expect(left).toEqual(expect.arrayContaining([table(0), table(-1), table(-2)]));
      expect((await historyOf(printer.id, '?start=30d&q=days%20ago')).body.items).toEqual([]);
    } finally {
      await db.destroy();
    }
  });
});

describe('tokens', () => {
  it('never appear in compute’s log lines', async () => {
    const text = c.logs.text;
    expect(text.length).toBeGreaterThan(0);
    for (const role of ['owner', 'viewer'] as const) expect(text).not.toContain(await c.token(role));
  });
});
