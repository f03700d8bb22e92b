// The built `pier` CLI on service metrics: a pier/tiny-http service gets requests through a
// real edge, and `pier services metrics` prints the window's totals (requests, status
// classes, latency) and its latest steps as a table; --window chooses 24h or 7d, a window it
// does not know is refused before any request, --json is the API's object.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEdge, until } from '@pier/testing';
import { cleanVpcs, TINY_HTTP } from './services-support.ts';
import { startCli, type CliHarness } from './cli-support.ts';

const edge = testEdge('apps.cli-metrics.test');
let cli: CliHarness;

beforeAll(async () => {
  cli = await startCli({ env: { compute: { ...edge.env, PIER_COMPUTE_METRICS_SAMPLE_MS: '500', PIER_COMPUTE_METRICS_FLUSH_MS: '500' } } });
  expect((await cli.login()).code).toBe(0);
  expect((await cli.pier(['services', 'create', 'web', '--image', TINY_HTTP, '--wait'])).code).toBe(0);
  const host = new URL((await cli.json(['services', 'show', 'web'])).url).hostname;
  await until(
    () => edge.get(host).catch(() => ({ status: 0 })),
    (r) => r.status === 200,
  );
  for (let i = 0; i < 12; i++) await edge.get(host, '/');
  for (let i = 0; i < 3; i++) await edge.get(host, '/missing');
  await until(
    () => cli.json(['services', 'metrics', 'web']),
    (m) => m.totals.requests >= 15 && m.points.some((p: any) => p.memory_bytes !== null),
    30_000,
  );
}, 120_000);

afterAll(async () => {
  await cli?.stop();
  await edge.remove();
  if (cli) await cleanVpcs(cli.platform.bootstrap.vpcId);
});

describe('pier services metrics', () => {
  it('prints the totals of the last hour and its latest steps', async () => {
    const m = await cli.json(['services', 'metrics', 'web']);
    const out = await cli.pier(['services', 'metrics', 'web']);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^window\s+1h \(steps of 1 min, \S+Z to \S+Z\)$/m);
    expect(out.stdout).toMatch(/^memory now\s+[\d.]+ (B|KiB|MiB)$/m);
    expect(out.stdout).toMatch(/^limits\s+0\.25 cores, 256\.0 MiB per replica$/m);
    expect(out.stdout).toMatch(new RegExp(`^requests\\s+${m.totals.requests}$`, 'm'));
    expect(out.stdout).toMatch(/^2xx\/3xx\/4xx\/5xx\s+1[2-9]\/0\/[3-9]\/0$/m);
    expect(out.stdout).toMatch(/^latency p50\s+[\d.]+ ms$/m);
    expect(out.stdout).toMatch(/^latency p95\s+[\d.]+ ms$/m);
    expect(out.stdout).toMatch(/^AT\s+CPU\s+MEMORY\s+REQ\/S\s+2XX\/3XX\/4XX\/5XX\s+P50\s+P95$/m);
    const rows = out.stdout.split('\n').filter((l) => /^\d{4}-\d\d-\d\dT/.test(l));
    expect(rows).toHaveLength(15);
    // The newest step first; a step with requests shows them.
    expect(rows.some((r) => /\s\d+\/0\/\d+\/0\s+[\d.]+ ms\s+[\d.]+ ms$/.test(r))).toBe(true);
  });

  it('chooses the window, refuses one it does not know, and gives the API object with --json', async () => {
    const day = await cli.pier(['services', 'metrics', 'web', '--window', '24h']);
    expect(day.code).toBe(0);
    expect(day.stdout).toMatch(/^window\s+24h \(steps of 15 min, /m);
    const week = await cli.json(['services', 'metrics', 'web', '--window', '7d']);
    expect(week.resolution_seconds).toBe(3600);
    expect(week.points).toHaveLength(168);
    const bad = await cli.pier(['services', 'metrics', 'web', '--window', '2h']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('one of 1h, 24h, 7d');
    const hour = await cli.json(['services', 'metrics', 'web']);
    expect(hour.points).toHaveLength(60);
    expect(hour.requests_unavailable).toBeNull();
  });
});
