// Uptime monitoring for real: compute on the Docker engine checks a pier/tiny-http service
// through a real edge (its public URL, over HTTPS, as users reach it), finds it down when its container is killed and up once it runs again, with the
// incident and the events in the outbox; checks survive a restart of compute; two checkers
// on one database never run a check twice. The interval floor is lowered to 1 s for it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createDb, createLogger, type Knex } from '@pier/kit';
import { UptimeChecker } from '../src/domain/uptime/uptime-checker.ts';
import { DOWN_AFTER_FAILURES } from '../src/domain/uptime/uptime-state.ts';
import { HttpUptimeProbe } from '../src/cluster/http-uptime-probe.ts';
import { KnexUptimeStore } from '../src/store/uptime-store.ts';
import { cleanDocker, docker, startCompute, until, vpcContainers, TINY_HTTP, type Compute } from './support.ts';
import { testEdge } from '@pier/testing';
import { replicaTarget } from './uptime-support.ts';

const INTERVAL = 1;
const TIMEOUT = 0.5;
const TICK_MS = 200;

// Checks go through a real edge, as users' requests do.
const edge = testEdge();
let c: Compute;
let knex: Knex | undefined;
let web: any;
let worker: any;

beforeAll(async () => {
  c = await startCompute({ ...edge.env, PIER_UPTIME_MIN_INTERVAL_SECONDS: String(INTERVAL), PIER_UPTIME_TICK_MS: String(TICK_MS) });
  web = (await c.post(c.base, { name: 'web', image: TINY_HTTP, health_check_path: '/healthz' })).body;
  worker = (await c.post(c.base, { name: 'jobs', service_type: 'worker' })).body;
  await settle(web.id, 'running');
  // The edge routes it (its first sync), so the first check already sees the service.
  const host = new URL(web.url).hostname;
  await until(
    () => edge.get(host).catch(() => ({ status: 0 })),
    (r) => r.status === 200,
  );
}, 120_000);

afterAll(async () => {
  await knex?.destroy();
  await c?.stop();
  await edge.remove();
  if (c) await cleanDocker(c.vpcId);
}, 60_000);

const uptimePath = (id: string) => `${c.base}/${id}/uptime`;
const uptime = async (id: string) => (await c.get(uptimePath(id))).body;
const settle = (id: string, want: string) =>
  until(
    () => c.get(`${c.base}/${id}`).then((r) => r.body),
    (s) => s.status === want,
    60_000,
  );
const replicaOf = async (id: string) => (await vpcContainers(c.vpcId, id)).find((x) => x.State === 'running')!;

async function sql(query: string, params: unknown[] = []): Promise<any[]> {
  const client = new pg.Client({ connectionString: c.db.adminUrl });
  await client.connect();
  try {
    return (await client.query(query, params)).rows;
  } finally {
    await client.end();
  }
}

const uptimeEvents = (serviceId: string) =>
  sql(`select kind, payload from compute.outbox where kind like 'service.uptime.%' and payload->>'resource_id' = $1 order by id`, [serviceId]);

const DISABLED = {
  enabled: false,
  path: null,
  interval_seconds: null,
  timeout_seconds: null,
  expected_status: null,
  status: 'unknown',
  last_checked_at: null,
  last_status_code: null,
  last_latency_ms: null,
  last_error: null,
  next_check_at: null,
  uptime_24h: null,
  uptime_7d: null,
  hourly_24h: [],
  incidents: [],
};

describe('uptime monitoring on docker', () => {
  it('is off until enabled', async () => {
    const res = await c.get(uptimePath(web.id));
    expect(res.status).toBe(200);
    expect(res.body).toEqual(DISABLED);
  });

  it('refuses bad settings with a 400 naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ path: 'healthz' }, 'path'],
      [{ path: '//evil.example/' }, 'path'],
      [{ path: '/a@evil.example' }, 'path'],
      [{ path: '/a\r\nX-Injected: 1' }, 'path'],
      [{ path: '/' + 'a'.repeat(2000) }, 'path'],
      [{ interval_seconds: 0 }, 'interval_seconds'],
      [{ interval_seconds: 3601 }, 'interval_seconds'],
      [{ interval_seconds: 1.5 }, 'interval_seconds'],
      [{ interval_seconds: 30, timeout_seconds: 30 }, 'timeout_seconds'],
      [{ timeout_seconds: 'soon' }, 'timeout_seconds'],
      [{ expected_status: { min: 400, max: 200 } }, 'expected_status'],
      [{ expected_status: '200-399' }, 'expected_status'],
    ];
    for (const [body, field] of cases) {
      const res = await c.post(uptimePath(web.id), body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.field, JSON.stringify(body)).toBe(field);
    }
    expect((await c.post(uptimePath(web.id), { url: 'http://elsewhere.example' })).status).toBe(400);
    expect(await uptime(web.id)).toEqual(DISABLED);
  });

  it('answers 404 for an unknown service, 409 naming the reason for a worker, 403 to a non-admin', async () => {
    for (const id of ['6f1c1a52-7d2e-4a8e-9d55-1f6f3d7d8a10', 'not-a-uuid']) {
      expect((await c.get(uptimePath(id))).body.code).toBe('service_not_found');
      expect((await c.post(uptimePath(id), {})).status).toBe(404);
      expect((await c.request('DELETE', uptimePath(id))).status).toBe(404);
    }
    const res = await c.post(uptimePath(worker.id), {});
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'not_a_web_service', error: expect.stringContaining('worker service') });
    expect((await c.post(uptimePath(web.id), {}, 'developer')).status).toBe(403);
    expect((await c.request('DELETE', uptimePath(web.id), undefined, { role: 'developer' })).status).toBe(403);
    expect((await c.get(uptimePath(web.id), 'viewer')).status).toBe(200);
  });

  it('enables with the defaults (201); a second POST replaces the settings (200)', async () => {
    const before = Date.now();
    const created = await c.post(uptimePath(web.id), {});
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      enabled: true,
      path: '/',
      interval_seconds: 60,
      timeout_seconds: 10,
      expected_status: { min: 200, max: 399 },
      status: 'unknown',
      last_checked_at: null,
      uptime_24h: null,
      uptime_7d: null,
      incidents: [],
    });
    // The first check comes at a random point of the interval.
    const first = Date.parse(created.body.next_check_at);
    expect(first).toBeGreaterThanOrEqual(before - 1000);
    expect(first).toBeLessThanOrEqual(Date.now() + 60_000);

    const replaced = await c.post(uptimePath(web.id), {
      path: '/healthz',
      interval_seconds: INTERVAL,
      timeout_seconds: TIMEOUT,
      expected_status: { min: 200, max: 299 },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({
      enabled: true,
      path: '/healthz',
      interval_seconds: INTERVAL,
      timeout_seconds: TIMEOUT,
      expected_status: { min: 200, max: 299 },
    });
  });

  it('checks the service and reads it up, with the status code, the latency and the percentages', async () => {
    const up = await until(
      () => uptime(web.id),
      (u) => u.status === 'up',
      15_000,
    );
    expect(up).toMatchObject({ last_status_code: 200, last_error: null, uptime_24h: 100, uptime_7d: 100, incidents: [] });
    expect(up.last_latency_ms).toBeGreaterThanOrEqual(0);
    expect(up.last_latency_ms).toBeLessThan(TIMEOUT * 1000);
    // A bar per hour: the monitor is seconds old, so only the current hour has checks (and
    // the one before, when the test spans the hour).
    const hours = up.hourly_24h as { hour: string; checks: number; uptime: number | null }[];
    expect(hours).toHaveLength(24);
    const thisHour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000).toISOString();
    expect(hours.at(-1)).toMatchObject({ hour: thisHour, uptime: 100 });
    expect(hours.at(-1)!.checks).toBeGreaterThan(0);
    expect(hours.slice(0, -2).every((h) => h.checks === 0 && h.uptime === null)).toBe(true);
    expect(Date.parse(hours[0]!.hour)).toBe(Date.parse(thisHour) - 23 * 3_600_000);
  });

  it(`goes down after ${DOWN_AFTER_FAILURES} failed checks once its replica is killed, and up again after a restart, with both events`, async () => {
    const events0 = (await uptimeEvents(web.id)).length;
    const replica = await replicaOf(web.id);
    const killedAt = Date.now();
    await docker.getContainer(replica.Id).kill();

    const down = await until(
      () => uptime(web.id),
      (u) => u.status === 'down',
      20_000,
    );
    const [incident] = down.incidents;
    expect(incident).toMatchObject({ ended_at: null, reason: expect.stringMatching(/timed out|refused|unreachable|reset/) });
    expect(down.last_error).toEqual(expect.any(String));
    // The incident starts at the first failed check: within an interval (and a timeout) of the kill.
    const startedAt = Date.parse(incident.started_at);
    expect(startedAt).toBeGreaterThanOrEqual(killedAt - INTERVAL * 1000);
    expect(startedAt - killedAt).toBeLessThan((INTERVAL + TIMEOUT) * 1000 + 2000);

    const [downEvent] = (await uptimeEvents(web.id)).slice(events0);
    expect(downEvent.kind).toBe('service.uptime.down');
    expect(downEvent.payload.data).toMatchObject({
      name: 'web',
      previous: 'up',
      path: '/healthz',
      reason: incident.reason,
      incident_started_at: incident.started_at,
    });
    // Written with the state change: the check that tipped it was at most a few intervals after the kill.
    expect(Date.parse(downEvent.payload.occurred_at) - killedAt).toBeLessThan((DOWN_AFTER_FAILURES + 1) * INTERVAL * 1000 + TIMEOUT * 1000 + 3000);

    expect((await c.post(`${c.base}/${web.id}/restart`)).status).toBe(202);
    await settle(web.id, 'running');
    const back = await until(
      () => uptime(web.id),
      (u) => u.status === 'up',
      15_000,
    );
    expect(back.incidents).toHaveLength(1);
    expect(back.incidents[0]).toMatchObject({ started_at: incident.started_at, reason: incident.reason, ended_at: expect.any(String) });
    expect(Date.parse(back.incidents[0].ended_at)).toBeGreaterThan(startedAt);
    expect(back.uptime_24h).toBeGreaterThan(0);
    expect(back.uptime_24h).toBeLessThan(100);

    const after = (await uptimeEvents(web.id)).slice(events0);
    expect(after.map((e) => e.kind)).toEqual(['service.uptime.down', 'service.uptime.up']);
    expect(after[1].payload.data).toMatchObject({ previous: 'down', status_code: 200, incident_started_at: incident.started_at });
  });

  it('resumes its checks after compute restarts: the schedule and the state are in the database', async () => {
    const before = await uptime(web.id);
    await c.restart();
    const after = await until(
      () => uptime(web.id),
      (u) => Date.parse(u.last_checked_at) > Date.parse(before.last_checked_at) + 1000,
      15_000,
    );
    expect(after).toMatchObject({ enabled: true, status: 'up', path: '/healthz', interval_seconds: INTERVAL, incidents: before.incidents });
  });

  describe('driven check by check (runDue), by two more checkers on the same database', () => {
    const checkers: UptimeChecker[] = [];
    let at: number;
    const run = async (hoursLater: number) => {
      const counts = await Promise.all(checkers.map((k) => k.runDue(new Date(at + hoursLater * 3_600_000))));
      return counts.reduce((a, b) => a + b, 0);
    };

    beforeAll(async () => {
      knex = createDb(c.db.urls.compute, 'compute', 4);
      const log = createLogger('uptime-test', 'warn');
      const deps = {
        store: new KnexUptimeStore(knex),
        probe: new HttpUptimeProbe(replicaTarget()),
        settings: { minIntervalSeconds: 1, concurrency: 16, retentionDays: 8 },
      };
      for (let i = 0; i < 2; i++) checkers.push(new UptimeChecker({ uptime: deps, eventsWritten: () => undefined, now: () => new Date() }, log, 60_000));
      // An hourly monitor whose next check is a day away: compute's own checker leaves it alone.
      expect((await c.post(uptimePath(web.id), { path: '/healthz', interval_seconds: 3600, timeout_seconds: 1 })).status).toBe(200);
      await sql(`update compute.uptime_monitors set next_check_at = now() + interval '1 day' where service_id = $1`, [web.id]);
      at = Date.now() + 86_400_000 + 60_000;
    });

    it('runs a due check once, whichever checker claims it, and moves the next one an interval on', async () => {
      const before = await uptime(web.id);
      expect(await run(0)).toBe(1);
      expect(await run(0)).toBe(0);
      const after = await uptime(web.id);
      expect(Date.parse(after.last_checked_at)).toBeGreaterThan(Date.parse(before.last_checked_at));
      // One interval on from where it was due (a day from the set-up), not from the claim.
      expect(Date.parse(after.next_check_at)).toBeGreaterThan(at);
      expect(Date.parse(after.next_check_at)).toBeLessThanOrEqual(at + 3_600_000);
      expect(after.status).toBe('up');
    });

    it('one failure is not down; the second is, with its incident and event committed together', async () => {
      const events0 = (await uptimeEvents(web.id)).length;
      const replica = await replicaOf(web.id);
      await docker.getContainer(replica.Id).kill();
      expect(await run(1)).toBe(1);
      expect(await uptime(web.id)).toMatchObject({ status: 'up', last_error: expect.any(String), last_status_code: null });
      expect((await uptimeEvents(web.id)).length).toBe(events0);

      expect(await run(2)).toBe(1);
      const down = await uptime(web.id);
      expect(down.status).toBe('down');
      expect(down.incidents[0]).toMatchObject({ ended_at: null });
      const events = (await uptimeEvents(web.id)).slice(events0);
      expect(events.map((e) => e.kind)).toEqual(['service.uptime.down']);

      await docker.getContainer(replica.Id).start();
      // The first success after the container is back makes it up (httpd may need a moment to listen).
      let hour = 3;
      const up = await until(
        async () => (await run(hour++)) && uptime(web.id),
        (u) => u.status === 'up',
        10_000,
        100,
      );
      expect(up).toMatchObject({ status: 'up', last_status_code: 200 });
      expect(up.incidents[0].ended_at).not.toBeNull();
      expect((await uptimeEvents(web.id)).slice(events0).map((e) => e.kind)).toEqual(['service.uptime.down', 'service.uptime.up']);
    });

    it('disables: 204, then enabled false with nothing kept; disabling again is fine', async () => {
      expect((await c.request('DELETE', uptimePath(web.id))).status).toBe(204);
      expect(await uptime(web.id)).toEqual(DISABLED);
      expect(await sql('select count(*)::int as n from compute.uptime_incidents where service_id = $1', [web.id])).toEqual([{ n: 0 }]);
      expect(await sql('select count(*)::int as n from compute.uptime_counts where service_id = $1', [web.id])).toEqual([{ n: 0 }]);
      expect((await c.request('DELETE', uptimePath(web.id))).status).toBe(204);
      expect(await run(10)).toBe(0);
    });

    it('ends the monitor with its service: no check after the delete, and the sweep removes it', async () => {
      expect((await c.post(uptimePath(web.id), { interval_seconds: 60 })).status).toBe(201);
      expect((await c.request('DELETE', `${c.base}/${web.id}`)).status).toBe(202);
      expect(await uptime(web.id)).toEqual(DISABLED);
      expect(await run(20)).toBe(0);
      await checkers[0]!.maintain(new Date());
      expect(await sql('select count(*)::int as n from compute.uptime_monitors where service_id = $1', [web.id])).toEqual([{ n: 0 }]);
    });
  });
});
