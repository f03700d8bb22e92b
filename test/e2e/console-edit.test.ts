// The console's edit and delete screens in chromium against a whole platform through the
// gateway (see console.test.ts): a Viewer sees a service without Edit or Delete (and the
// edit address, typed in, says why it has no form); an owner opens a service's edit form
// filled with its configuration, sees the API's 400 at the field it names, changes the
// instance type and sees it on the detail once the rollout is over, then deletes the
// service after typing its name and is taken back to the list without it; renames a
// PostgreSQL database (a name the API refuses first, at its field), and deletes a backup
// after a confirmation (the newest one first, which the API keeps: its 409 in the dialog);
// a Viewer sees no Edit section and no backup's Delete. A service's live logs, followed
// through a second gateway that then stops (its stream ends with the `reconnect` event)
// and comes back on the same address, go on with every numbered line once: none lost,
// none twice. On each
// screen: axe-core finds nothing serious, no CSP violation, no console error beyond the
// browser's own line for the API's deliberate 400, no sideways scroll at 390 px.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { checkScreen, launchChromium, openTab, signIn } from './console-support.ts';
import { buildConsole } from '../../packages/console/scripts/build.ts';
import { startPlatform, type Platform } from '../support/platform.ts';
import { startOidcProvider, type OidcProvider } from '../support/oidc.ts';
import { memberKey } from '../support/members.ts';
import * as gateway from '@pier/gateway';
import { freePort } from '../support/platform.ts';
import { cleanVpcs, TINY_HTTP, waitForStatus } from './services-support.ts';
import { cleanupVpc, DATABASES_ENV, waitForStatus as waitForDatabase } from './databases-helpers.ts';

let p: Platform;
let oidc: OidcProvider;
let browser: Browser;
let viewerKey: string;
let servicesPath: string;
let databasesPath: string;
let databaseId: string;
let consoleDir: string;

beforeAll(async () => {
  const [built] = await Promise.all([buildConsole({ ifNeeded: true }), startOidcProvider().then((o) => (oidc = o))]);
  consoleDir = built.dir;
  p = await startPlatform({ env: { auth: oidc.env, gateway: { PIER_CONSOLE_DIR: built.dir }, databases: DATABASES_ENV } });
  browser = await launchChromium();
  viewerKey = await memberKey(p, oidc, 'console-edit-viewer@example.com', 'viewer');
  servicesPath = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/services`;
  databasesPath = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/databases`;
  // Provisioned while the service tests run.
  const db = await p.api(p.bootstrap.token).post(databasesPath, { name: 'console-edit-db', storage_gb: 1 });
  expect(db.status).toBe(202);
  databaseId = db.body.id;
}, 120_000);

/** Takes a backup through the API and waits until it has completed; its name. */
async function completedBackup(): Promise<string> {
  const owner = p.api(p.bootstrap.token);
  const taken = await owner.post(`${databasesPath}/${databaseId}/backups`, {});
  expect(taken.status).toBe(202);
  await expect
    .poll(
      async () => (await owner.get(`${databasesPath}/${databaseId}/backups`)).body.items.find((b: { name: string }) => b.name === taken.body.name)?.status,
      {
        timeout: 120_000,
        interval: 1000,
      },
    )
    .toBe('completed');
  return taken.body.name;
}

const section = (page: Page, name: string) => page.getByRole('navigation', { name: 'Database sections' }).getByRole('link', { name, exact: true }).click();

afterAll(async () => {
  await browser?.close();
  await p?.stop();
  if (p) await Promise.all([cleanVpcs(p.bootstrap.vpcId), cleanupVpc(p.bootstrap.vpcId)]);
  await oidc?.stop();
});

describe('the console’s edit and delete screens in chromium', () => {
  let serviceId: string;

  it('a Viewer sees a service without Edit or Delete', async () => {
    const owner = p.api(p.bootstrap.token);
    const made = await owner.post(servicesPath, { name: 'console-edit', image: TINY_HTTP, health_check_path: '/healthz' });
    expect(made.status).toBe(201);
    serviceId = made.body.id;
    await waitForStatus(owner, `${servicesPath}/${serviceId}`, 'running', 60_000);

    const tab = await openTab(browser, p.gatewayUrl, { width: 390, height: 844 });
    const { page } = tab;
    await signIn(page, p.gatewayUrl, viewerKey);
    await page.locator('tr[data-service="console-edit"]').getByRole('link').click();
    await page.getByRole('heading', { name: 'console-edit' }).waitFor();
    await page.getByRole('heading', { name: 'Logs' }).waitFor();
    expect(await page.getByRole('link', { name: /Edit/ }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /Delete/ }).count()).toBe(0);
    await checkScreen(page);
    await page.goto(`${p.gatewayUrl}/services/${serviceId}/edit`);
    await page.getByText('Editing a service needs the Owner or Admin role.').waitFor();
    expect(await page.getByRole('button', { name: 'Save changes' }).count()).toBe(0);
    expect(tab.errors).toEqual([]);
    expect(await tab.violations()).toEqual([]);
    await tab.context.close();
  }, 120_000);

  it('an owner edits a service (a 400 at its field first) and deletes it after typing its name', async () => {
    const owner = p.api(p.bootstrap.token);
    const tab = await openTab(browser, p.gatewayUrl);
    const { page } = tab;
    await signIn(page, p.gatewayUrl, p.bootstrap.token);
    await page.locator('tr[data-service="console-edit"]').getByRole('link').click();
    await page.getByRole('heading', { name: 'console-edit' }).waitFor();

    // The form holds the service's configuration now.
    await page.getByRole('link', { name: 'Edit service console-edit' }).click();
    await page.getByRole('heading', { name: 'Edit console-edit' }).waitFor();
    expect(await page.getByLabel('Image').inputValue()).toBe(TINY_HTTP);
    expect(await page.getByLabel('Port').inputValue()).toBe('8080');
    expect(await page.getByLabel('Health check path').inputValue()).toBe('/healthz');
    expect(await page.getByLabel('Instance type').inputValue()).toBe('svc.nano');
    expect(await page.getByLabel('Name', { exact: true }).getAttribute('readonly')).not.toBeNull();
    await checkScreen(page);

    // A port the API refuses: its message under the port field, the field marked invalid.
    await page.getByLabel('Port').fill('70000');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.locator('[data-field="port"] .field-error').waitFor();
    expect(await page.getByLabel('Port').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByLabel('Port').getAttribute('aria-describedby')).toContain('port-error');
    await checkScreen(page);
    expect((await owner.get(`${servicesPath}/${serviceId}`)).body.port).toBe(8080);

    // A new instance type: the detail follows the rollout and shows it.
    await page.getByLabel('Port').fill('8080');
    await page.getByLabel('Instance type').selectOption('svc.micro');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(`${p.gatewayUrl}/services/${serviceId}`);
    await page
      .locator('.facts')
      .getByText(/svc\.micro/)
      .waitFor();
    await expect.poll(() => page.locator('.facts .badge').textContent(), { timeout: 60_000, interval: 500 }).toBe('running');
    expect((await owner.get(`${servicesPath}/${serviceId}`)).body).toMatchObject({ instance_type: 'svc.micro', port: 8080, image: TINY_HTTP });

    // Delete: held until the name is typed, then the list without it.
    await page.getByRole('button', { name: 'Delete service console-edit' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete service?' });
    await dialog.waitFor();
    const confirm = dialog.getByRole('button', { name: 'Delete service' });
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel('Type console-edit to confirm').fill('console-edi');
    expect(await confirm.isDisabled()).toBe(true);
    await checkScreen(page);
    await dialog.getByLabel('Type console-edit to confirm').fill('console-edit');
    await confirm.click();
    await page.waitForURL(`${p.gatewayUrl}/services`, { timeout: 60_000 });
    await page.getByRole('heading', { name: 'Services' }).waitFor();
    await expect.poll(() => page.locator('tr[data-service="console-edit"]').count(), { timeout: 10_000 }).toBe(0);
    // Soft-deleted: the detail still answers, as `deleted`.
    expect((await owner.get(`${servicesPath}/${serviceId}`)).body.status).toBe('deleted');
    expect(tab.errors.filter((e) => !/status of 400/.test(e))).toEqual([]);
    expect(await tab.violations()).toEqual([]);
    await tab.context.close();
  }, 180_000);

  it('an owner renames a database (a refused name at its field first) and deletes a backup after a confirmation', async () => {
    const owner = p.api(p.bootstrap.token);
    await waitForDatabase(owner, `${databasesPath}/${databaseId}`, 'running');
    const older = await completedBackup();
    const newest = await completedBackup();

    const tab = await openTab(browser, p.gatewayUrl);
    const { page } = tab;
    await signIn(page, p.gatewayUrl, p.bootstrap.token);
    await page.goto(`${p.gatewayUrl}/databases/${databaseId}`);
    await page.getByRole('heading', { name: 'console-edit-db' }).waitFor();
    await section(page, 'Edit');
    const name = page.getByLabel('Name', { exact: true });
    await name.waitFor();
    expect(await name.inputValue()).toBe('console-edit-db');
    expect(await page.getByLabel('Storage (GB)').inputValue()).toBe('1');
    expect(await page.getByLabel('Instance type').inputValue()).toBe('svc.nano');
    expect(await page.getByLabel('External access').isChecked()).toBe(false);
    await checkScreen(page);

    await name.fill('Not A Name');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.locator('#edit-db-name-error').waitFor();
    expect(await name.getAttribute('aria-invalid')).toBe('true');
    await checkScreen(page);
    await name.fill('console-renamed');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('heading', { name: 'console-renamed' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    expect((await owner.get(`${databasesPath}/${databaseId}`)).body.name).toBe('console-renamed');

    // The newest completed backup is kept by the API (the recovery window needs it): its
    // 409 stays in the dialog. The older one goes.
    await section(page, 'Backups');
    await page.locator(`tr[data-backup="${older}"]`).waitFor();
    await page.getByRole('button', { name: `Delete backup ${newest}` }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete backup?' });
    await dialog.getByRole('button', { name: 'Delete backup' }).click();
    await dialog.getByRole('alert').waitFor();
    await checkScreen(page);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.getByRole('button', { name: `Delete backup ${older}` }).click();
    await dialog.getByRole('button', { name: 'Delete backup' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.locator(`tr[data-backup="${older}"]`).waitFor({ state: 'detached' });
    expect(await page.locator(`tr[data-backup="${newest}"]`).count()).toBe(1);
    expect((await owner.get(`${databasesPath}/${databaseId}/backups`)).body.items.map((b: { name: string }) => b.name)).toEqual([newest]);
    expect(tab.errors.filter((e) => !/status of (400|409)/.test(e))).toEqual([]);
    expect(await tab.violations()).toEqual([]);
    await tab.context.close();
  }, 360_000);

  it('a Viewer sees a database without its Edit section and its backups without Delete', async () => {
    const tab = await openTab(browser, p.gatewayUrl, { width: 390, height: 844 });
    const { page } = tab;
    await signIn(page, p.gatewayUrl, viewerKey);
    await page.goto(`${p.gatewayUrl}/databases/${databaseId}/backups`);
    await page.locator('tr[data-backup]').first().waitFor();
    const sections = page.getByRole('navigation', { name: 'Database sections' });
    expect(await sections.getByRole('link').allTextContents()).not.toContain('Edit');
    expect(await page.getByRole('button', { name: /Delete/ }).count()).toBe(0);
    await checkScreen(page);
    expect(tab.errors).toEqual([]);
    expect(await tab.violations()).toEqual([]);
    await tab.context.close();
  }, 60_000);

  it('live logs go on after the API says reconnect, with no line lost or shown twice', async () => {
    const owner = p.api(p.bootstrap.token);
    // A worker printing a numbered line four times a second.
    const made = await owner.post(servicesPath, {
      name: 'console-ticks',
      service_type: 'worker',
      image: 'pier/debian-base:bookworm',
      command: ['sh', '-c', 'i=0; while :; do echo "tick $i"; i=$((i+1)); sleep 0.25; done'],
    });
    expect(made.status).toBe(201);
    await waitForStatus(owner, `${servicesPath}/${made.body.id}`, 'running', 60_000);
    // A gateway of this test's own, so it can stop (draining: its streams end with
    // `reconnect`) and come back on the same address.
    const port = await freePort();
    const config = gateway.readConfig({
      PIER_GATEWAY_PORT: String(port),
      PIER_GATEWAY_METRICS_PORT: '0',
      PIER_BIND_HOST: '127.0.0.1',
      PIER_LOG_LEVEL: 'warn',
      PIER_AUTH_GRPC_URL: p.serviceUrls.authGrpc,
      PIER_AUTH_URL: p.serviceUrls.auth,
      PIER_COMPUTE_URL: p.serviceUrls.compute,
      PIER_DATABASES_URL: p.serviceUrls.databases,
      PIER_SECRETS_URL: p.serviceUrls.secrets,
      PIER_EVENTS_URL: p.serviceUrls.events,
      PIER_GATEWAY_SERVICE_PRIVATE_KEY: p.gatewayKeys.privateJwk,
      PIER_CONSOLE_DIR: consoleDir,
      PIER_SHUTDOWN_DELAY_MS: '200',
    });
    let g = await gateway.start(config);
    const base = `http://127.0.0.1:${port}`;
    try {
      const tab = await openTab(browser, base);
      const { page } = tab;
      const missing: string[] = [];
      page.on('response', (r) => r.status() === 404 && missing.push(r.url()));
      const follows: URL[] = [];
      page.on('request', (r) => r.url().includes('/logs?') && follows.push(new URL(r.url())));
      await signIn(page, base, p.bootstrap.token);
      await page.goto(`${base}/services/${made.body.id}`);
      const logs = page.getByLabel('Log lines');
      const ticks = async () => [...((await logs.textContent()) ?? '').matchAll(/tick (\d+)/g)].map((m) => Number(m[1]));
      await expect.poll(async () => (await ticks()).length, { timeout: 30_000 }).toBeGreaterThan(4);
      const before = Math.max(...(await ticks()));
      await g.stop();
      g = await gateway.start(config);
      // Lines printed while no gateway answered arrive too, after the last one shown.
      await expect.poll(async () => Math.max(...(await ticks())), { timeout: 30_000 }).toBeGreaterThan(before + 8);
      // The follow opened again from the newest line shown, not from the recent lines.
      expect(follows[0]!.searchParams.get('since')).toBeNull();
      expect(follows.at(-1)!.searchParams.get('since')).toMatch(/^\d{4}-\d\d-\d\dT/);
      const seen = await ticks();
      expect(seen).toEqual(Array.from({ length: seen.length }, (_, i) => seen[0]! + i));
      await checkScreen(page);
      // The browser's own lines for requests made while the gateway was away.
      expect(
        tab.errors.filter((e) => !/ERR_CONNECTION_REFUSED|status of 503/.test(e)),
        `404s: ${missing.join(', ')}`,
      ).toEqual([]);
      expect(await tab.violations()).toEqual([]);
      await tab.context.close();
    } finally {
      await g.stop();
    }
  }, 180_000);
});
