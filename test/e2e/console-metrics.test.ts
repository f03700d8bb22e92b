// The Metrics section of a service's page in a real browser (chromium, as console.test.ts
// drives it), against a whole platform whose compute runs a real edge: a web service gets
// requests through the edge, and its page charts CPU, memory, requests, status classes and
// latency, each chart with its values as text, and switches between 1h, 24h and 7d. The CSP
// holds, the browser reports no error, axe-core finds no serious or critical violation, and
// the page does not scroll sideways at 390 px.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { testEdge, until } from '@pier/testing';
import { axe, launchChromium, noSidewaysScroll, openTab, signIn } from './console-support.ts';
import { buildConsole } from '../../packages/console/scripts/build.ts';
import { startPlatform, type Platform } from '../support/platform.ts';
import { cleanVpcs, TINY_HTTP, waitForStatus } from './services-support.ts';

const edge = testEdge('apps.metrics.test');
let p: Platform;
let browser: Browser;
let servicePath: string;

beforeAll(async () => {
  const built = await buildConsole({ ifNeeded: true });
  p = await startPlatform({
    env: {
      gateway: { PIER_CONSOLE_DIR: built.dir },
      compute: { ...edge.env, PIER_COMPUTE_METRICS_SAMPLE_MS: '500', PIER_COMPUTE_METRICS_FLUSH_MS: '500' },
    },
  });
  browser = await launchChromium();
  const owner = p.api(p.bootstrap.token);
  const created = await owner.post(`/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/services`, { name: 'charted', image: TINY_HTTP });
  expect(created.status).toBe(201);
  servicePath = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/services/${created.body.id}`;
  await waitForStatus(owner, servicePath, 'running', 60_000);
  const host = new URL(created.body.url).hostname;
  await until(
    () => edge.get(host).catch(() => ({ status: 0 })),
    (r) => r.status === 200,
  );
  for (let i = 0; i < 20; i++) await edge.get(host, i % 4 === 3 ? '/missing' : '/');
  await until(
    () => owner.get(`${servicePath}/metrics`).then((r) => r.body),
    (m) => (m.totals.requests ?? 0) >= 20 && m.points.some((pt: any) => pt.memory_bytes !== null),
    30_000,
  );
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await p?.stop();
  await edge.remove();
  if (p) await cleanVpcs(p.bootstrap.vpcId);
});

describe('service metrics in the console', () => {
  it('charts CPU, memory, requests, status classes and latency with their values as text, and switches windows', async () => {
    const tab = await openTab(browser, p.gatewayUrl);
    const { page } = tab;
    await signIn(page, p.gatewayUrl, p.bootstrap.token);
    await page.goto(`${p.gatewayUrl}/services/${servicePath.split('/').pop()}`);
    const section = page.locator('section[aria-labelledby="metrics-title"]');
    await section.getByRole('heading', { name: 'Metrics' }).waitFor();
    const caption = (id: string) => section.locator(`#${id}-caption`);
    await expect.poll(() => caption('m-rps').textContent(), { timeout: 15_000 }).toMatch(/Requests: [\d.]+ req\/s now, peak [\d.]+ req\/s/);
    expect(await caption('m-mem').textContent()).toMatch(/Memory: [\d.]+ (B|KiB|MiB) now/);
    // CPU is a rate between two reads of the replica: the page's next poll (15 s) brings it if the first read had none.
    await expect.poll(() => caption('m-cpu').textContent(), { timeout: 25_000 }).toMatch(/CPU: [\d.]+ cores now, peak [\d.]+ cores/);
    expect(await caption('m-status').textContent()).toMatch(/2xx: \d+ now, peak [1-9]\d*;.*4xx: \d+ now, peak [1-9]\d*/);
    expect(await caption('m-latency').textContent()).toMatch(/p50: [\d.]+ ms now.*p95: [\d.]+ ms now/);
    // Each chart is an image named by its title and its values.
    expect(await section.getByRole('img', { name: /^Latency .*p50: [\d.]+ ms now/ }).count()).toBe(1);
    expect(await section.locator('svg path.chart-line[d^="M"]').count()).toBeGreaterThanOrEqual(4);
    // Every step as a table.
    await section.getByText('Every step as a table').click();
    expect(await section.locator('tbody tr').count()).toBe(60);
    expect(await section.getByRole('button', { name: '1h' }).getAttribute('aria-pressed')).toBe('true');
    expect(await axe(page)).toEqual([]);

    await section.getByRole('button', { name: '24h' }).click();
    await expect.poll(() => section.locator('p.muted').first().textContent()).toContain('The last 24 hours in steps of 15 min');
    expect(await section.getByRole('button', { name: '24h' }).getAttribute('aria-pressed')).toBe('true');
    expect(await section.getByRole('button', { name: '1h' }).getAttribute('aria-pressed')).toBe('false');
    await expect.poll(() => section.locator('tbody tr').count()).toBe(96);
    expect(await caption('m-rps').textContent()).toMatch(/req\/s now/);
    await section.getByRole('button', { name: '7d' }).click();
    await expect.poll(() => section.locator('p.muted').first().textContent()).toContain('The last 7 days in steps of 1 h');
    await expect.poll(() => section.locator('tbody tr').count()).toBe(168);

    await page.setViewportSize({ width: 390, height: 800 });
    await noSidewaysScroll(page);
    expect(tab.errors).toEqual([]);
    expect(await tab.violations()).toEqual([]);
    await tab.context.close();
  });
});
