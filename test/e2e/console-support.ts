// Shared by the console's browser tests (test/e2e/console*.test.ts): Debian's chromium
// through playwright-core, a tab that records console errors and CSP violations, axe-core
// served same-origin (so the CSP still holds), the no-sideways-scroll check at narrow
// widths, and signing in by keyboard with a token.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { expect } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.PIER_TEST_CHROMIUM ?? '/usr/bin/chromium';
const AXE_PATH = '/__test/axe.min.js';
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export async function launchChromium(): Promise<Browser> {
  expect(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium (./pier test does)`).toBe(true);
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}

/** What the browser reported on one tab: console errors, uncaught exceptions, CSP violations. */
export interface Watched {
  page: Page;
  context: BrowserContext;
  errors: string[];
  violations: () => Promise<string[]>;
}

export async function openTab(browser: Browser, baseUrl: string, viewport = { width: 1280, height: 800 }): Promise<Watched> {
  const context = await browser.newContext({ viewport });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl });
  // A test-only, same-origin URL for axe-core's own file: a <script src> the CSP allows.
  await context.route(`${baseUrl}${AXE_PATH}`, (route) => route.fulfill({ contentType: 'text/javascript', body: axeSource }));
  // Init scripts run from the devtools protocol, outside the page's CSP.
  await context.addInitScript(() => {
    const w = window as unknown as { __csp: string[] };
    w.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => w.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  const page = await context.newPage();
  const errors: string[] = [];
  // Less chromium's ERR_NETWORK_CHANGED: docker adds network interfaces on this host while
  // containers start (rollouts, builds, a new VPC), and chromium then aborts requests in
  // flight; the console reads again on its next poll.
  page.on('console', (m) => m.type() === 'error' && !/ERR_NETWORK_CHANGED/.test(m.text()) && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(e.message));
  return { page, context, errors, violations: () => page.evaluate(() => (window as unknown as { __csp: string[] }).__csp) };
}

export async function axe(page: Page): Promise<string[]> {
  await page.addScriptTag({ url: AXE_PATH });
  return page.evaluate(async () => {
    const run = (
      window as unknown as {
        axe: { run: (ctx: Document, opts: object) => Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] }> };
      }
    ).axe.run;
    const r = await run(document, { resultTypes: ['violations'] });
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
}

export async function noSidewaysScroll(page: Page): Promise<void> {
  const { scroll, client, wide } = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    client: document.documentElement.clientWidth,
    // What sticks out, to say so when it fails.
    wide: [...document.querySelectorAll('body *')]
      .filter((e) => !e.closest('.table-wrap') && e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
      .slice(0, 5)
      .map((e) => `${e.tagName.toLowerCase()}.${e.className} (${Math.round(e.getBoundingClientRect().right)}px)`),
  }));
  expect(scroll, `page is ${scroll}px wide in a ${client}px window: ${wide.join(', ')}`).toBeLessThanOrEqual(client);
}

export async function signIn(page: Page, baseUrl: string, token: string): Promise<void> {
  const res = await page.goto(`${baseUrl}/`);
  expect(res!.headers()['content-security-policy']).toMatch(/default-src 'self'.*connect-src 'self'/);
  expect(res!.headers()['x-content-type-options']).toBe('nosniff');
  // By keyboard: the token field is the first stop, Enter submits.
  await page.keyboard.press('Tab');
  const focused = page.getByLabel('Token');
  await expect.poll(() => focused.evaluate((el) => el === document.activeElement)).toBe(true);
  expect(await focused.evaluate((el) => getComputedStyle(el).outlineStyle)).toBe('solid');
  await page.keyboard.type(token);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Services' }).waitFor();
}

/** The screen passes axe-core and fits 390 px without sideways scrolling; the viewport is put back after. */
export async function checkScreen(page: Page): Promise<void> {
  expect(await axe(page)).toEqual([]);
  const { width, height } = page.viewportSize()!;
  await page.setViewportSize({ width: 390, height: 844 });
  await noSidewaysScroll(page);
  await page.setViewportSize({ width, height });
}
