// Signing in to the console with the identity provider, in a real browser: the test
// provider (test/support/oidc.ts) speaks authorization code + PKCE like a real one, and
// its ID tokens live 65 s, so the console's silent refresh (a minute ahead) comes within
// seconds. A person clicks "Sign in with Test IdP", types their e-mail on the provider's
// page, lands on Services signed in with the provider's ID token; the token is renewed
// without a reload and the API keeps answering with the new one; signing out forgets both
// tokens; a callback the tab did not start is refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { axe, launchChromium, openTab } from './console-support.ts';
import { buildConsole } from '../../packages/console/scripts/build.ts';
import { startPlatform, type Platform } from '../support/platform.ts';
import { startOidcProvider, type OidcProvider } from '../support/oidc.ts';
import { memberKey } from '../support/members.ts';

let p: Platform;
let oidc: OidcProvider;
let browser: Browser;
const EMAIL = 'console-oidc@example.com';

beforeAll(async () => {
  const [built] = await Promise.all([buildConsole({ ifNeeded: true }), startOidcProvider({ idTokenSeconds: 65 }).then((o) => (oidc = o))]);
  p = await startPlatform({ env: { auth: oidc.env, gateway: { PIER_CONSOLE_DIR: built.dir, ...oidc.consoleEnv } } });
  await memberKey(p, oidc, EMAIL, 'admin');
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await p?.stop();
  await oidc?.stop();
});

const stored = (page: Page) =>
  page.evaluate(() => ({ token: sessionStorage.getItem('pier.console.token'), refresh: sessionStorage.getItem('pier.console.oidc.refresh') }));

describe('console sign-in with the identity provider', () => {
  it('signs in with authorization code + PKCE, renews the token before it expires, and forgets both on sign-out', async () => {
    const tab = await openTab(browser, p.gatewayUrl);
    const { page } = tab;
    const res = await page.goto(`${p.gatewayUrl}/`);
    // The provider's origin is the one other place the console may call (code exchange, refresh).
    expect(res!.headers()['content-security-policy']).toContain(`connect-src 'self' ${new URL(oidc.issuer).origin}`);
    const button = page.getByRole('button', { name: 'Sign in with Test IdP' });
    await button.waitFor();
    expect(await axe(page)).toEqual([]);
    await button.click();

    // The provider's own page.
    await page.waitForURL(/\/authorize\?/);
    const authorize = new URL(page.url());
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${p.gatewayUrl}/auth/callback`);
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByRole('button', { name: 'Continue' }).click();

    await page.getByRole('heading', { name: 'Services' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/services');
    const first = await stored(page);
    expect(first.token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(first.refresh).toBeTruthy();
    expect(await page.getByText('Admin').first().isVisible()).toBe(true);

    // Renewed five seconds in (65 s tokens, a minute ahead), without a reload.
    await expect.poll(() => oidc.refreshes, { timeout: 30_000 }).toBeGreaterThanOrEqual(1);
    await expect.poll(async () => (await stored(page)).token, { timeout: 10_000 }).not.toBe(first.token);
    const renewed = await stored(page);
    expect(renewed.refresh).not.toBe(first.refresh);
    // The new token is the one the API now gets, and it answers.
    const seen = page.waitForRequest((r) => r.url().includes('/api/v1/') && r.headers().authorization === `Bearer ${renewed.token}`);
    await page.getByRole('link', { name: 'Secrets' }).click();
    await page.getByRole('heading', { name: 'Secrets' }).waitFor();
    await seen;
    expect((await p.api(renewed.token!).get('/api/v1/me')).body.email).toBe(EMAIL);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Token').waitFor();
    expect(await stored(page)).toEqual({ token: null, refresh: null });
    expect(tab.errors).toEqual([]);
    expect(await tab.violations()).toEqual([]);
    await tab.context.close();
  }, 90_000);

  it('refuses a callback this tab did not start', async () => {
    const tab = await openTab(browser, p.gatewayUrl);
    await tab.page.goto(`${p.gatewayUrl}/auth/callback?code=stolen&state=forged`);
    await tab.page.getByText('This sign-in was not started here').waitFor();
    expect(await stored(tab.page)).toEqual({ token: null, refresh: null });
    expect(await axe(tab.page)).toEqual([]);
    await tab.context.close();
  });
});
