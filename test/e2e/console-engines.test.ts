// The console's database-create form on what the cluster offers (GET /api/v1/database-engines)
// in a real chromium through the gateway: on a platform whose databases run on kubernetes
// (the in-process fake API server, CloudNativePG and MOCO chosen) the version is a choice
// among the operators' versions with the default preselected, MySQL's instance types and
// rules are shown from the offer, and a PostgreSQL database created with a non-default
// version is one the API then shows with it. With the offer unreadable (the gateway's
// route to databases leads nowhere) the version is typed, and the API's message says why.
// On each screen: axe-core finds nothing serious, no CSP violation, no sideways scroll at 390 px.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { FakeKubernetes } from '@pier/testing';
import { checkScreen, launchChromium, openTab, signIn } from './console-support.ts';
import { buildConsole } from '../../packages/console/scripts/build.ts';
import { freePort, startPlatform, type Platform } from '../support/platform.ts';

let fake: FakeKubernetes;
let p: Platform;
let browser: Browser;
let consoleDir: string;

beforeAll(async () => {
  const [built] = await Promise.all([buildConsole({ ifNeeded: true }), new FakeKubernetes().start().then((f) => (fake = f))]);
  consoleDir = built.dir;
  p = await startPlatform({
    env: {
      gateway: { PIER_CONSOLE_DIR: consoleDir },
      databases: { PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: await fake.writeKubeconfig(), PIER_DATABASES_KUBERNETES_OPERATOR: 'cloudnative-pg,moco' },
    },
  });
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await p?.stop();
  await fake?.stop();
});

async function openCreateForm(page: Page, platform: Platform): Promise<void> {
  await signIn(page, platform.gatewayUrl, platform.bootstrap.token);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Databases' }).click();
  await page.getByRole('link', { name: 'Create database' }).click();
  await page.getByRole('heading', { name: 'Create a database' }).waitFor();
}

const optionTexts = (page: Page, label: string) => page.getByLabel(label).locator('option').allTextContents();

describe('the create form on the cluster’s offer', () => {
  it('offers the versions with the default preselected, and creates PostgreSQL 14 on kubernetes', async () => {
    const owner = p.api(p.bootstrap.token);
    const base = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/databases`;
    const offer = (await owner.get('/api/v1/database-engines')).body;
    expect(offer.adapter).toBe('kubernetes');
    const tab = await openTab(browser, p.gatewayUrl);
    const { page } = tab;
    await openCreateForm(page, p);

    const pgVersion = page.locator('select#db-postgres_version');
    await pgVersion.waitFor();
    expect(await optionTexts(page, 'PostgreSQL version')).toEqual(['13', '14', '15', '16 (default)', '17']);
    expect(await pgVersion.inputValue()).toBe('16');
    expect(await page.locator('#db-postgres_version-hint').textContent()).toBe('PostgreSQL on the kubernetes cluster: 13, 14, 15, 16, 17; default 16.');
    expect(await page.getByLabel('Instance type').inputValue()).toBe('svc.nano');
    expect(await page.locator('#replicas-hint').textContent()).toBe('PostgreSQL: read replicas, 0 to 8 on this cluster. Default 0.');
    await checkScreen(page);

    // MySQL: its versions, its default instance type, the rules still said before submit.
    await page.getByLabel('Engine').selectOption('mysql');
    const myVersion = page.locator('select#db-mysql_version');
    await myVersion.waitFor();
    expect(await optionTexts(page, 'MySQL version')).toEqual(['8.0', '8.4 (default)']);
    expect(await myVersion.inputValue()).toBe('8.4');
    expect(await page.getByLabel('Instance type').inputValue()).toBe('svc.small');
    expect((await optionTexts(page, 'Instance type')).filter((t) => t.includes('(not for MySQL)'))).toEqual(['svc.nano — 0.25 CPU, 256 MiB (not for MySQL)']);
    const rules = page.getByRole('region', { name: 'MySQL rules' });
    expect(await rules.textContent()).toContain('must be odd');
    expect(await rules.textContent()).not.toContain('MariaDB'); // MOCO runs MySQL itself
    await page.getByLabel('Instance type').selectOption('svc.nano');
    await page.locator('#instance_type-error').filter({ hasText: 'svc.nano is not available for mysql' }).waitFor();
    await page.getByLabel('Replicas', { exact: true }).fill('7');
    await page.locator('#replicas-error').filter({ hasText: 'must be between 1 and 5 for mysql on this cluster' }).waitFor();
    await checkScreen(page);

    // Back to PostgreSQL: its default again; a non-default version chosen and sent.
    await page.getByLabel('Engine').selectOption('postgresql');
    await pgVersion.waitFor();
    expect(await pgVersion.inputValue()).toBe('16');
    await page.getByLabel('Instance type').selectOption('svc.nano');
    await page.getByLabel('Replicas', { exact: true }).fill('0');
    await page.getByLabel('Name', { exact: true }).fill('engines-pg');
    await pgVersion.focus();
    await page.keyboard.press('ArrowUp'); // 16 -> 15 -> 14, by keyboard
    await page.keyboard.press('ArrowUp');
    expect(await pgVersion.inputValue()).toBe('14');
    await page.getByRole('button', { name: 'Create database' }).click();
    await page.waitForURL(/\/databases\/[0-9a-f-]{36}$/);
    const id = page.url().split('/').pop()!;
    expect((await owner.get(`${base}/${id}`)).body).toMatchObject({ name: 'engines-pg', engine: 'postgresql', postgres_version: '14', mysql_version: null });
    // What CloudNativePG is asked to run: the 14 image.
    const clusters = fake.list('Cluster').filter((c) => c.apiVersion === 'postgresql.cnpg.io/v1');
    expect(clusters.map((c) => (c as { spec: { imageName: string } }).spec.imageName)).toEqual([expect.stringMatching(/:14\.\d+/)]);
    expect(await tab.violations()).toEqual([]);
    expect(tab.errors).toEqual([]);
    await tab.context.close();
  });

  it('falls back to a typed version, with the API’s message, when the offer cannot be read', async () => {
    // A gateway whose databases upstream is a port nothing listens on: every databases path is 503.
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const broken = await startPlatform({ env: { gateway: { PIER_CONSOLE_DIR: consoleDir, PIER_DATABASES_URL: nowhere } } });
    try {
      const refused = await broken.api(broken.bootstrap.token).get('/api/v1/database-engines');
      expect(refused.status).toBe(503);
      const tab = await openTab(browser, broken.gatewayUrl);
      const { page } = tab;
      await openCreateForm(page, broken);
      const version = page.locator('input#db-postgres_version');
      await version.waitFor();
      const hint = page.locator('#db-postgres_version-hint');
      await hint.filter({ hasText: 'could not be read' }).waitFor();
      expect(await hint.textContent()).toBe(`Empty: the cluster’s default. The versions it offers could not be read: ${refused.body.error}`);
      // Without the offer, the contract's rules still stand before submit.
      await page.getByLabel('Engine').selectOption('mysql');
      await page.getByRole('region', { name: 'MySQL rules' }).waitFor();
      expect(await page.getByLabel('Instance type').inputValue()).toBe('svc.small');
      await page.locator('input#db-mysql_version').fill('8.0');
      await page.getByLabel('Name', { exact: true }).fill('typed');
      await checkScreen(page);
      // The form still sends; the API's answer (the same 503 here) is shown.
      await page.getByRole('button', { name: 'Create database' }).click();
      await page.getByRole('alert').filter({ hasText: refused.body.error }).waitFor();
      expect(await tab.violations()).toEqual([]);
      expect(tab.errors.filter((e) => !/status of 503/.test(e))).toEqual([]);
    } finally {
      await broken.stop();
    }
  });
});
