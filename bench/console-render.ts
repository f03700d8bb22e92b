/**
 * The console's services page with many services, in Debian's chromium (issue 30: 200
 * services render within 500 ms on loopback): each run loads /services signed in (the token
 * put in session storage before the page's script runs), and times, in the page, from the
 * navigation's start to the table showing every service: the HTML, the script, the first
 * API reads (me, workspaces, VPCs, the list) and the render. Called by bench/services.ts
 * once its services exist; the gateway serves packages/console/dist, built here if needed.
 * The first load is a browser's first visit (nothing cached), not the servers' first requests
 * since they started: the page's reads are made once over HTTP before the browser starts,
 * as any running platform has had them made by someone.
 */
import { existsSync } from 'node:fs';
import { chromium, type Page } from 'playwright-core';
import { buildConsole } from '../packages/console/scripts/build.ts';

const CHROMIUM = process.env.PIER_TEST_CHROMIUM ?? '/usr/bin/chromium';

export async function benchConsoleRender(gatewayUrl: string, token: string, count: number, log: (line: string) => void, runs = 7): Promise<number[]> {
  if (!existsSync(CHROMIUM)) {
    log(`  console: ${CHROMIUM} is missing (apt-get install chromium; ./pier test does): not measured`);
    return [];
  }
  await buildConsole({ ifNeeded: true });
  await warmServer(gatewayUrl, token);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addInitScript((t: string) => sessionStorage.setItem('pier.console.token', t), token);
    const page = await context.newPage();
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      await page.goto(`${gatewayUrl}/services`, { waitUntil: 'commit' });
      const ms = await page.waitForFunction((n: number) => (document.querySelectorAll('main table tbody tr').length >= n ? performance.now() : false), count, {
        polling: 'raf',
        timeout: 30_000,
      });
      times.push((await ms.jsonValue()) as number);
      if (i === 0 || i === runs - 1) log(`  console: load #${i + 1}: ${await timeline(page)}`);
    }
    // The first load fills the browser's cache (hashed files are immutable): later ones are a return visit.
    const [first, ...again] = times;
    const sorted = [...again].sort((a, b) => a - b);
    log(
      `  console: /services showing ${count} services: first load ${first!.toFixed(0)} ms; again p50 ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} ms, max ${sorted.at(-1)!.toFixed(0)} ms (${again.length} loads, chromium headless, goal 500 ms)`,
    );
    return times;
  } finally {
    await browser.close();
  }
}

/**
 * Where a load's time went, from the page's own Performance entries: the HTML's response,
 * then each script, style and API read as `name start→end` (ms from the navigation's start).
 */
async function timeline(page: Page): Promise<string> {
  return page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
    const parts = [`html →${nav.responseEnd.toFixed(0)}`, `dom ${nav.domInteractive.toFixed(0)}`];
    for (const r of performance.getEntriesByType('resource') as PerformanceResourceTiming[]) {
      const u = new URL(r.name);
      const name = u.pathname.startsWith('/api/') ? u.pathname.replace(/^\/api\/v1/, '').replace(/[0-9a-f-]{36}/g, '…') : u.pathname.split('/').pop();
      parts.push(`${name} ${r.startTime.toFixed(0)}→${r.responseEnd.toFixed(0)}`);
    }
    return parts.join(', ');
  });
}

/** The reads the page makes, once each, so their first-call costs (JIT, connections) are not the browser's. */
async function warmServer(gatewayUrl: string, token: string): Promise<void> {
  const get = async (path: string, accept = 'application/json') => {
    const res = await fetch(`${gatewayUrl}${path}`, { headers: { authorization: `Bearer ${token}`, accept } });
    if (!res.ok) throw new Error(`GET ${path}: ${res.status}`);
    return res.headers.get('content-type')?.includes('json') ? ((await res.json()) as { items?: { id: string }[] }) : (await res.text(), {});
  };
  await get('/services', 'text/html');
  await get('/console-config.json');
  await get('/api/v1/me');
  const ws = (await get('/api/v1/workspaces?limit=200')).items?.[0]?.id;
  if (!ws) return;
  const vpc = (await get(`/api/v1/workspaces/${ws}/vpcs?limit=200`)).items?.[0]?.id;
  if (vpc) await get(`/api/v1/workspaces/${ws}/vpcs/${vpc}/services?limit=200`);
}
