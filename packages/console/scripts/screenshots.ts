/**
 * Regenerates the screenshots packages/console/README.md shows (screenshots/*.png): a whole
 * platform on this machine (PostgreSQL and NATS containers as the benchmarks start them,
 * the services as processes, the docker cluster), a few services and a PostgreSQL database
 * made through the API, and Debian's chromium at 1280 × 800 signed in as the owner:
 *   services.png  the services list;
 *   logs.png      a service's detail with its live logs;
 *   shell.png     the browser shell after `echo hi`;
 *   sql.png       the SQL console with a query's results.
 * Everything it made is deleted at the end.
 *
 *   pnpm --filter @pier/console screenshots      (or: node --import tsx scripts/screenshots.ts)
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Locator } from 'playwright-core';
import { startInfra } from '../../../bench/infra.ts';
import { startPlatformAt } from '../../../test/support/platform-core.ts';
import { buildConsole } from './build.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.resolve(here, '../screenshots');
const CHROMIUM = process.env.PIER_TEST_CHROMIUM ?? '/usr/bin/chromium';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the answers of a handful of calls, read by field
async function api(base: string, token: string, method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(base + p, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status >= 400) throw new Error(`${method} ${p}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 120_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`not ready within ${ms} ms: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function main(): Promise<void> {
  await mkdir(OUT, { recursive: true });
  const [built, infra] = await Promise.all([buildConsole({ ifNeeded: true }), startInfra()]);
  const platform = await startPlatformAt({
    postgresAdminUrl: infra.postgresAdminUrl,
    natsUrl: infra.natsUrl,
    env: { gateway: { PIER_CONSOLE_DIR: built.dir }, compute: { PIER_COMPUTE_LOG_FLUSH_MS: '100', PIER_COMPUTE_LOG_SCAN_MS: '500' } },
  });
  const { token, workspaceId, vpcId } = platform.bootstrap;
  const gw = platform.gatewayUrl;
  const vpc = `/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}`;
  const made: string[] = [];
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const worker = `i=0; while :; do echo "GET /orders/$i 200 $((i % 17 + 3))ms"; i=$((i+1)); sleep 0.7; done`;
    const services = [
      { name: 'api', service_type: 'worker', image: 'pier/debian-base:bookworm', command: ['sh', '-c', worker] },
      { name: 'web', image: 'pier/tiny-http:1', port: 8080, health_check_path: '/healthz' },
      { name: 'jobs', service_type: 'worker', image: 'pier/debian-base:bookworm', command: ['sleep', 'infinity'] },
    ];
    const ids: string[] = [];
    for (const s of services) {
      const created = await api(gw, token, 'POST', `${vpc}/services`, s);
      made.push(`${vpc}/services/${created.id}`);
      ids.push(created.id);
    }
    const db = await api(gw, token, 'POST', `${vpc}/databases`, { name: 'main' });
    made.push(`${vpc}/databases/${db.id}`);
    for (const id of ids)
      await until(
        () => api(gw, token, 'GET', `${vpc}/services/${id}`),
        (s) => s.status === 'running',
      );
    await until(
      () => api(gw, token, 'GET', `${vpc}/databases/${db.id}`),
      (d) => d.status === 'running',
    );
    for (const sql of [
      'create table customers (id serial primary key, name text not null, plan text not null, since date not null)',
      "insert into customers (name, plan, since) values ('Acme Corp', 'team', '2026-03-02'), ('Globex', 'pro', '2026-05-19'), ('Initech', 'team', '2026-08-07'), ('Umbrella', 'enterprise', '2026-10-30')",
    ])
      await api(gw, token, 'POST', `${vpc}/databases/${db.id}/query`, { sql });

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
    await context.addInitScript((t: string) => sessionStorage.setItem('pier.console.token', t), token);
    const page = await context.newPage();
    const shot = (name: string) => page.screenshot({ path: path.join(OUT, name) });

    await page.goto(`${gw}/services`);
    await page.getByRole('link', { name: 'api' }).waitFor();
    await page.waitForFunction(() => document.querySelectorAll('main tbody tr').length >= 3);
    await shot('services.png');

    await page.goto(`${gw}/services/${ids[0]}`);
    await page.getByText('GET /orders/3 ').first().waitFor({ timeout: 30_000 });
    await scrollTo(page.getByRole('heading', { name: 'Logs', exact: true }));
    await shot('logs.png');

    await page.getByRole('button', { name: 'Open shell' }).click();
    await page.getByRole('status').filter({ hasText: 'Connected.' }).waitFor({ timeout: 15_000 });
    await page.locator('.xterm-helper-textarea').waitFor({ state: 'attached' });
    await page.keyboard.type('echo hi\n');
    await page.waitForFunction(() => [...document.querySelectorAll('.xterm-rows > div')].some((r) => r.textContent?.trim() === 'hi'));
    await scrollTo(page.locator('.xterm'));
    await shot('shell.png');

    await page.goto(`${gw}/databases/${db.id}/sql`);
    await page.getByLabel('SQL statement').fill('select * from customers order by id');
    await page.getByRole('button', { name: 'Run' }).click();
    await page.getByRole('region', { name: 'Query results' }).getByText('Umbrella').waitFor();
    await scrollTo(page.getByLabel('SQL statement'));
    await shot('sql.png');
    console.log(`screenshots written to ${OUT}`);
  } finally {
    await browser.close();
    for (const p of made) await api(gw, token, 'DELETE', p).catch(() => undefined);
    // Their teardown runs in the background: give it the time to finish before the platform stops.
    for (const p of made)
      await until(
        () => fetch(gw + p, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status),
        (s) => s === 404,
        60_000,
      ).catch(() => undefined);
    await platform.stop();
    await infra.stop();
  }
}

/** Puts the element at the top of the window, so the shot shows it rather than the page's head. */
async function scrollTo(what: Locator): Promise<void> {
  await what.first().evaluate((el) => el.scrollIntoView({ block: 'start' }));
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`screenshots failed: ${(err as Error).stack ?? err}`);
    process.exit(1);
  },
);
