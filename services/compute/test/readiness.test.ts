// compute's /readyz names its cluster and NATS: each taken away (a link in front of the
// real Docker engine, another in front of the suite's NATS) and brought back. Its /metrics
// counts services by status and unfinished builds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { infra, readyz as readyzOf, sampleValue, scrape, socketLink } from '@pier/testing';
import { cleanDocker, startCompute, TINY_HTTP, until, type Compute } from './support.ts';

let c: Compute;
const docker = socketLink({ path: '/var/run/docker.sock' });
const natsUrl = new URL(infra().natsUrl);
const nats = socketLink({ host: natsUrl.hostname, port: Number(natsUrl.port) });

beforeAll(async () => {
  await docker.up();
  await nats.up();
  c = await startCompute({ PIER_DOCKER_HOST: `unix://${docker.address}`, PIER_NATS_URL: `nats://${nats.address}` });
}, 60_000);

const readyz = () => readyzOf(c.url);

afterAll(async () => {
  await c?.stop();
  if (c) await cleanDocker(c.vpcId);
  await docker.down();
  await nats.down();
});

describe('compute readiness', () => {
  it('is ready with its database, NATS and cluster; not_ready naming the cluster while the engine is away', async () => {
    expect(await readyz()).toMatchObject({
      status: 200,
      body: { status: 'ready', checks: { database: { ok: true }, nats: { ok: true }, cluster: { ok: true } } },
    });
    await docker.down();
    try {
      const down = await until(readyz, (r) => r.status === 503, 20_000);
      expect(down.body.status).toBe('not_ready');
      expect(down.body.checks.cluster!.ok).toBe(false);
      expect(down.body.checks.cluster!.error).toMatch(/\S/);
      expect(down.body.checks.nats).toEqual({ ok: true });
    } finally {
      await docker.up();
    }
    await until(readyz, (r) => r.status === 200, 20_000);
  });

  it('is not_ready naming NATS while the broker is away, and recovers', async () => {
    await nats.down();
    try {
      const down = await until(readyz, (r) => r.status === 503, 20_000);
      expect(down.body.checks.nats!.ok).toBe(false);
      expect(down.body.checks.cluster).toEqual({ ok: true });
      expect(down.body.checks.database).toEqual({ ok: true });
    } finally {
      await nats.up();
    }
    const back = await until(readyz, (r) => r.status === 200, 30_000);
    expect(back.body.checks.nats).toEqual({ ok: true });
  });

  it('counts the probes themselves under their own route', async () => {
    const samples = await scrape(c.url);
    expect(sampleValue(samples, 'pier_http_request_duration_seconds_count', { route: '/readyz', status: '503' })).toBeGreaterThanOrEqual(2);
    expect(sampleValue(samples, 'pier_http_request_duration_seconds_count', { route: '/readyz', status: '200' })).toBeGreaterThanOrEqual(3);
  });

  it('counts services by status and unfinished builds', async () => {
    const before = await scrape(c.url);
    expect(sampleValue(before, 'pier_compute_services', { status: 'running' })).toBe(0);
    expect(sampleValue(before, 'pier_compute_services', { status: 'crashed' })).toBe(0);
    expect(sampleValue(before, 'pier_compute_builds', { status: 'queued' })).toBe(0);
    expect(sampleValue(before, 'pier_compute_builds', { status: 'running' })).toBe(0);
    const created = await c.post(c.base, { name: 'counted', image: TINY_HTTP });
    expect(created.status).toBeLessThan(300);
    const after = await until(
      () => scrape(c.url),
      (s) => sampleValue(s, 'pier_compute_services', { status: 'running' }) === 1,
      30_000,
    );
    const total = after.filter((s) => s.name === 'pier_compute_services').reduce((a, s) => a + s.value, 0);
    expect(total).toBe(1);
  });

  it('times its Engine API calls by operation and outcome: the pings of the probes, failed while the engine was away', async () => {
    const samples = await scrape(c.url);
    const calls = (operation: string, outcome: string) => sampleValue(samples, 'pier_cluster_call_duration_seconds_count', { operation, outcome }) ?? 0;
    expect(calls('ping', 'ok')).toBeGreaterThanOrEqual(3);
    expect(calls('ping', 'error')).toBeGreaterThanOrEqual(1);
    expect(calls('container create', 'ok')).toBeGreaterThanOrEqual(1);
  });
});
