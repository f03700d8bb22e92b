// The console's service screens in a real browser (Debian's chromium through playwright-core)
// against a whole platform through the gateway: an owner creates a service with the form
// (the API's 400 shown at its field first), watches it reach running on its detail page,
// runs `echo hi` in the browser shell (xterm.js over the exec WebSocket, loaded only then),
// sees the terminal's size reach the server, ends it with `exit 3` and sees the exit code;
// edits the environment with a secret reference (the secret's value is never on the page
// nor in any answer the page received), rolls back to the first deployment after a
// confirmation, attaches a domain and sees its DNS records, and finds a line in the log
// history; builds from git and from an uploaded archive with the log followed live, cancels
// one, turns uptime monitoring on and off; takes a disk backup, schedules backups and
// restores one. Throughout: no console error, no CSP
// violation (the gateway's `connect-src 'self'` lets the same-origin ws: through; xterm's
// styles come from a file and constructed stylesheets), no serious axe-core finding, no
// sideways scroll at 390 px. A Viewer sees no "Create service".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { docker, RUN_LABELS, startGitServer, TEST_BACKUP_VOLUME, testEdge, type GitServer } from '@pier/testing';
import { axe, checkScreen, launchChromium, noSidewaysScroll, openTab, signIn } from './console-support.ts';
import { buildConsole } from '../../packages/console/scripts/build.ts';
import { startPlatform, type Platform } from '../support/platform.ts';
import { startOidcProvider, type OidcProvider } from '../support/oidc.ts';
import { memberKey } from '../support/members.ts';
import { cleanVpcs, dockerCli, TINY_HTTP, waitForStatus } from './services-support.ts';

let p: Platform;
let oidc: OidcProvider;
let browser: Browser;
let servicesPath: string;
let viewerKey: string;
let git: GitServer;
let work: string;

/** A value only the secret holds: it must never reach the browser. */
const SECRET_VALUE = `never-shown-${Math.random().toString(16).slice(2)}`;
const HOST = 'shop.example.test';
// Custom domains need the edge (without it the API answers 503 `edge_unavailable`).
const edge = testEdge('apps.example.test');

beforeAll(async () => {
  const [built] = await Promise.all([buildConsole({ ifNeeded: true }), startOidcProvider().then((o) => (oidc = o)), startGitServer().then((g) => (git = g))]);
  await git.createRepo('site');
  await git.commit('site', { Dockerfile: 'FROM pier/tiny-http:1\nCOPY index.html /www/index.html\n', 'index.html': '<p>built in the console</p>\n' }, 'first');
  await git.createRepo('slow');
  await git.commit('slow', { Dockerfile: 'FROM pier/tiny-http:1\nRUN echo slow-build-started && sleep 300\n' }, 'first');
  work = await mkdtemp(path.join(tmpdir(), 'pier-console-services-'));
  await dockerCli('volume', 'create', ...RUN_LABELS.flatMap((l) => ['--label', l]), TEST_BACKUP_VOLUME);
  p = await startPlatform({
    env: {
      auth: oidc.env,
      gateway: { PIER_CONSOLE_DIR: built.dir },
      compute: {
        ...edge.env,
        PIER_COMPUTE_LOG_FLUSH_MS: '100',
        PIER_COMPUTE_LOG_SCAN_MS: '500',
        // Builds from the test's git server; uptime checks every second.
        PIER_BUILD_ALLOWED_HOSTS: git.ip,
        PIER_BUILD_ALLOW_HTTP: 'true',
        PIER_BUILD_WORK_DIR: path.join(work, 'builds'),
        PIER_BUILD_INTERVAL_MS: '300',
        PIER_UPTIME_MIN_INTERVAL_SECONDS: '1',
        PIER_UPTIME_TICK_MS: '200',
        PIER_COMPUTE_BACKUP_VOLUME: TEST_BACKUP_VOLUME,
      },
    },
  });
  browser = await launchChromium();
  servicesPath = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/services`;
  viewerKey = await memberKey(p, oidc, 'console-svc-viewer@example.com', 'viewer');
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await p?.stop();
  await edge.remove();
  if (p) await cleanVpcs(p.bootstrap.vpcId);
  for (const image of await docker.listImages({ filters: JSON.stringify({ label: ['pier.kind=build'] }) })) {
    if (p && image.Labels?.['pier.workspace'] === p.bootstrap.workspaceId)
      await docker
        .getImage(image.Id)
        .remove({ force: true })
        .catch(() => {});
  }
  await oidc?.stop();
  await git?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

/** The terminal's rows as text (xterm's DOM renderer: one element per row). */
const terminalRows = (page: Page) => page.locator('.xterm-rows > div').allTextContents();

describe('the console: service screens in chromium', () => {
  it('creates a service with the form, opens a shell, edits env with a secret reference, rolls back, attaches a domain and searches the log history', async () => {
    const owner = p.api(p.bootstrap.token);
    const secret = await owner.post(`/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/secrets`, {
      name: 'console-svc-secret',
      values: { DB_PASSWORD: SECRET_VALUE },
    });
    expect(secret.status).toBe(201);

    const tab = await openTab(browser, p.gatewayUrl);
    const { page } = tab;
    // Every answer the page gets, kept to look for the secret's value; and the scripts it loads.
    const answers: Promise<string>[] = [];
    const scripts: string[] = [];
    page.on('response', (r) => {
      const type = r.headers()['content-type'] ?? '';
      if (type.includes('json')) answers.push(r.text().catch(() => ''));
    });
    page.on('request', (r) => r.resourceType() === 'script' && scripts.push(r.url()));
    const frames: string[] = [];
    page.on('websocket', (ws) => ws.on('framereceived', (f) => frames.push(String(f.payload))));

    await signIn(page, p.gatewayUrl, p.bootstrap.token);
    await page.getByRole('link', { name: 'Create service' }).click();
    await page.getByRole('heading', { name: 'Create a service' }).waitFor();
    // Defaults are shown beside the fields.
    expect(await page.locator('[data-field="port"]').textContent()).toContain('Default: 8080');
    expect(await page.locator('[data-field="run_as_user"]').textContent()).toContain('Default: 1000');
    expect(await page.getByLabel('Instance type').inputValue()).toBe('svc.nano');
    await checkScreen(page);

    // A name the API refuses: its message under the name field, the field marked invalid.
    await page.getByLabel('Name', { exact: true }).fill('Bad Name');
    await page.getByRole('button', { name: 'Create service' }).click();
    await page.locator('[data-field="name"] .field-error').waitFor();
    expect(await page.getByLabel('Name', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    expect(await axe(page)).toEqual([]);

    await page.getByLabel('Name', { exact: true }).fill('console-shop');
    await page.getByLabel('Image').fill(TINY_HTTP);
    await page.getByLabel('Health check path').fill('/healthz');
    // Prints a line to find in the log history, then serves as the image does.
    await page
      .getByLabel('Command', { exact: true })
      .fill(['/bin/busybox', 'sh', '-c', 'echo "console-marker ready"; exec /bin/busybox httpd -f -p 8080 -h /www'].join('\n'));
    await page.getByRole('button', { name: 'Create service' }).click();
    await page.getByRole('heading', { name: 'console-shop' }).waitFor();
    const serviceId = decodeURIComponent(page.url().split('/').pop()!);
    const servicePath = `${servicesPath}/${serviceId}`;
    const created = (await owner.get(servicePath)).body;
    expect(created).toMatchObject({ name: 'console-shop', service_type: 'web', port: 8080, run_as_user: 1000, min_replicas: 1, health_check_path: '/healthz' });
    expect(created.command).toEqual(['/bin/busybox', 'sh', '-c', 'echo "console-marker ready"; exec /bin/busybox httpd -f -p 8080 -h /www']);
    // Progress while it starts, then its final state, without a reload.
    const badge = page.locator('.facts .badge');
    await expect.poll(() => badge.textContent(), { timeout: 60_000 }).toBe('running');
    await page.locator('.progress-note').waitFor({ state: 'detached' });
    await checkScreen(page);

    // The shell: xterm.js is not in the first load, only once a shell opens.
    expect(scripts.some((s) => /terminal-/.test(s))).toBe(false);
    await page.getByRole('button', { name: 'Open shell' }).click();
    await page.getByRole('status').filter({ hasText: 'Connected.' }).waitFor({ timeout: 15_000 });
    expect(scripts.some((s) => /terminal-.*\.js$/.test(s))).toBe(true);
    expect(await page.evaluate(() => [...document.querySelectorAll('link[rel="stylesheet"]')].map((l) => (l as HTMLLinkElement).href).join(' '))).toMatch(
      /\/assets\/terminal-[^ ]+\.css/,
    );
    await page.locator('.xterm-helper-textarea').waitFor({ state: 'attached' });
    // xterm's own rules (theme, row sizes) live in constructed stylesheets, not <style> elements.
    expect(await page.evaluate(() => document.querySelectorAll('style').length)).toBe(0);
    expect(await page.evaluate(() => document.adoptedStyleSheets.some((sheet) => [...sheet.cssRules].some((r) => r.cssText.includes('xterm-rows'))))).toBe(
      true,
    );
    await page.keyboard.type('echo hi\n');
    await expect.poll(async () => (await terminalRows(page)).map((r) => r.trim()), { timeout: 10_000 }).toContain('hi');
    // The terminal's size reaches the server: at 390 px it is narrower.
    // `stty size` prints the rows and columns the server's terminal has; a tag per run tells the runs apart.
    const sttySize = async (tag: string) => {
      await page.keyboard.type(`echo "${tag}:$(stty size)"\n`);
      const pattern = new RegExp(`^${tag}:(\\d+) (\\d+)$`);
      let size: number[] = [];
      await expect
        .poll(
          async () => {
            const found = (await terminalRows(page)).map((r) => pattern.exec(r.trim())).find(Boolean);
            size = found ? found.slice(1).map(Number) : [];
            return size.length;
          },
          { timeout: 10_000 },
        )
        .toBe(2);
      return size;
    };
    const [, wideCols] = await sttySize('wide');
    expect(wideCols).toBeGreaterThan(80);
    expect(await axe(page)).toEqual([]);
    await page.setViewportSize({ width: 390, height: 844 });
    await noSidewaysScroll(page);
    // The box's new size is fitted on its next layout, and the resize message sent then.
    await new Promise((r) => setTimeout(r, 1000));
    const [, narrowCols] = await sttySize('narrow');
    expect(narrowCols).toBeLessThan(wideCols!);
    expect(narrowCols).toBeLessThan(50);
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.keyboard.type('exit 3\n');
    await page.getByRole('status').filter({ hasText: 'Session ended: exited with code 3.' }).waitFor({ timeout: 10_000 });
    await page.getByRole('button', { name: 'Open a new shell' }).waitFor();

    // The environment: a plain value and a reference to the secret's key.
    await page.getByRole('button', { name: 'Add a variable' }).click();
    await page.getByLabel('Name 1', { exact: true }).fill('GREETING');
    await page.getByLabel('Value 1', { exact: true }).fill('hello');
    await page.getByRole('button', { name: 'Add a variable' }).click();
    await page.getByLabel('Name 2', { exact: true }).fill('DB_PASSWORD');
    await page.getByLabel('Source 2').selectOption('secret');
    await page.getByLabel(/^Secret 2/).selectOption({ label: 'console-svc-secret' });
    await page.getByLabel('Secret key 2').selectOption('DB_PASSWORD');
    await page.getByRole('button', { name: 'Save environment' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved: the service rolls out' }).waitFor();
    const env = (await owner.get(`${servicePath}/env`)).body.variables;
    expect(env.map(({ id: _id, ...v }: { id: string }) => v)).toEqual([
      { key: 'GREETING', value: 'hello' },
      { key: 'DB_PASSWORD', secret_id: secret.body.id, secret_key: 'DB_PASSWORD' },
    ]);
    await waitForStatus(owner, servicePath, 'running', 60_000);
    await expect.poll(() => badge.textContent(), { timeout: 15_000 }).toBe('running');
    await checkScreen(page);

    // Roll back to the first deployment (the create), after a confirmation.
    const history = (await owner.get(`${servicePath}/deployments`)).body.items as { id: string; reason: string }[];
    const first = history.find((d) => d.reason === 'create')!;
    await expect.poll(() => page.locator('tr[data-deployment]').count(), { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    await page
      .locator(`tr[data-deployment="${first.id}"]`)
      .getByRole('button', { name: /^Roll back/ })
      .click();
    const dialog = page.getByRole('dialog', { name: 'Roll back?' });
    await dialog.waitFor();
    expect(await axe(page)).toEqual([]);
    await dialog.getByRole('button', { name: 'Roll back' }).click();
    await page.getByRole('status').filter({ hasText: 'Rolling back to' }).waitFor();
    const latest = async () => ((await owner.get(`${servicePath}/deployments`)).body.items as { reason: string; rollback_of: string | null }[])[0];
    await expect.poll(latest, { timeout: 10_000 }).toMatchObject({ reason: 'rollback', rollback_of: first.id });
    await expect.poll(() => page.locator('tr[data-deployment]').first().textContent(), { timeout: 10_000 }).toContain('rollback');
    await waitForStatus(owner, servicePath, 'running', 60_000);

    // A custom domain: the DNS records to create, each with a copy button.
    await page.getByLabel('Hostname to attach').fill(HOST);
    await page.getByRole('button', { name: 'Attach domain' }).click();
    const card = page.locator(`article[data-domain="${HOST}"]`);
    await card.waitFor();
    const txt = card.locator('tr[data-record="TXT"]');
    expect(await txt.textContent()).toContain(`_pier-challenge.${HOST}`);
    expect(await txt.textContent()).toContain('pier-verify=');
    await card.getByRole('button', { name: 'Copy TXT value' }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toMatch(/^pier-verify=/);
    expect(await card.locator('tr[data-record]').count()).toBeGreaterThanOrEqual(2);
    expect(await card.textContent()).toContain('Certificate:');
    // Verify asks DNS, which holds no such record: the API's answer is on the card.
    await card.getByRole('button', { name: `Verify ${HOST}` }).click();
    await expect.poll(() => card.locator('.note-error, [role="alert"]').count(), { timeout: 20_000 }).toBeGreaterThan(0);
    await checkScreen(page);

    // The log history: the line printed at start, found by its text.
    await page.getByLabel('Containing').fill('console-marker');
    await page.getByRole('button', { name: 'Search logs' }).click();
    const found = page.getByLabel('Log history lines');
    await expect.poll(() => found.textContent().catch(() => ''), { timeout: 15_000 }).toContain('console-marker ready');
    await page.getByLabel('Containing').fill('no-such-line-anywhere');
    await page.getByRole('button', { name: 'Search logs' }).click();
    await page.getByRole('status').filter({ hasText: 'No line matches.' }).waitFor();
    await checkScreen(page);

    // The secret's value reached neither the page nor any answer it received.
    expect(await page.content()).not.toContain(SECRET_VALUE);
    const bodies = await Promise.all(answers);
    expect(bodies.length).toBeGreaterThan(10);
    expect(bodies.filter((b) => b.includes(SECRET_VALUE))).toEqual([]);
    expect(frames.filter((f) => f.includes(SECRET_VALUE))).toEqual([]);

    // Nothing but the browser's own lines for the 400 of the refused name and the domain check.
    expect(tab.errors.filter((e) => !/status of (400|409|422)/.test(e))).toEqual([]);
    expect(await tab.violations()).toEqual([]);
    await tab.context.close();
  }, 300_000);

  it('builds from git with the log followed live, cancels a build, and turns uptime monitoring on', async () => {
    const owner = p.api(p.bootstrap.token);
    const service = (await owner.get(servicesPath)).body.items.find((s: { name: string }) => s.name === 'console-shop');
    const tab = await openTab(browser, p.gatewayUrl);
    const { page } = tab;
    await signIn(page, p.gatewayUrl, p.bootstrap.token);
    await page.goto(`${p.gatewayUrl}/services/${service.id}`);
    await page.getByRole('heading', { name: 'Builds' }).waitFor();

    // Uptime: checks every second through the edge; the state reaches up.
    await page.getByLabel('Every (seconds)').fill('1');
    await page.getByLabel('Timeout (seconds)').fill('0.5');
    await page.getByRole('button', { name: 'Enable monitoring' }).click();
    const uptime = page.getByRole('region', { name: 'Uptime' });
    await expect.poll(() => uptime.locator('.facts .badge').first().textContent(), { timeout: 30_000 }).toBe('up');
    await uptime.getByRole('meter', { name: 'Uptime over 24 hours' }).waitFor();
    expect(await uptime.textContent()).toContain('every 1 s');
    // A bar per hour, the current one up and saying so; the 23 before had no checks.
    const bars = uptime.getByRole('list', { name: 'Uptime by hour, the last 24 hours' }).getByRole('listitem');
    await expect.poll(() => bars.count()).toBe(24);
    expect(await bars.last().textContent()).toMatch(/: 100% of \d+ checks$/);
    expect(await bars.first().textContent()).toMatch(/: no checks$/);

    // A git build, not deployed: its log arrives live and it ends succeeded.
    const builds = page.getByRole('region', { name: 'Builds' });
    await builds.getByLabel('Repository URL').fill(git.url('site'));
    await builds.getByLabel('Deploy the image once built').uncheck();
    await builds.getByRole('button', { name: 'Start build' }).click();
    const log = builds.getByLabel('Build log');
    await expect.poll(() => log.textContent(), { timeout: 60_000 }).toContain('index.html');
    await builds.getByRole('status').filter({ hasText: 'ended: succeeded' }).waitFor({ timeout: 120_000 });
    await expect.poll(() => builds.locator('tr[data-build] .badge').first().textContent(), { timeout: 10_000 }).toBe('succeeded');
    await checkScreen(page);

    // An uploaded archive (a .tar.gz of a directory holding a Dockerfile) builds the same way.
    const src = path.join(work, 'upload-src');
    await mkdir(src, { recursive: true });
    await writeFile(path.join(src, 'Dockerfile'), 'FROM pier/tiny-http:1\nRUN echo uploaded-source-build\n');
    const archive = path.join(work, 'source.tar.gz');
    await promisify(execFile)('tar', ['-czf', archive, '-C', src, '.']);
    await builds.getByLabel('Upload an archive').check();
    await builds.getByLabel('Source archive').setInputFiles(archive);
    await builds.getByRole('button', { name: 'Start build' }).click();
    await expect.poll(() => log.textContent(), { timeout: 60_000 }).toContain('uploaded-source-build');
    await builds.getByRole('status').filter({ hasText: 'ended: succeeded' }).waitFor({ timeout: 120_000 });
    expect((await owner.get(`${servicesPath}/${service.id}/builds`)).body.items[0]).toMatchObject({ source: 'upload', status: 'succeeded', deploy: false });
    await builds.getByLabel('Git repository').check();

    // A slow build, cancelled while it runs.
    await builds.getByLabel('Repository URL').fill(git.url('slow'));
    await builds.getByRole('button', { name: 'Start build' }).click();
    await expect.poll(() => log.textContent(), { timeout: 60_000 }).toContain('slow-build-started');
    await builds.getByRole('button', { name: 'Cancel build' }).click();
    await builds.getByRole('status').filter({ hasText: 'ended: cancelled' }).waitFor({ timeout: 30_000 });
    await expect.poll(() => builds.locator('tr[data-build] .badge').first().textContent(), { timeout: 10_000 }).toBe('cancelled');

    // Monitoring off again.
    await uptime.getByRole('button', { name: 'Disable monitoring' }).click();
    await uptime.getByText('Uptime monitoring is off.').waitFor();
    expect(await axe(page)).toEqual([]);
    expect(tab.errors).toEqual([]);
    expect(await tab.violations()).toEqual([]);
    await tab.context.close();
  }, 300_000);

  it('takes a disk backup, sets and removes the schedule, and restores after a confirmation', async () => {
    const owner = p.api(p.bootstrap.token);
    const created = await owner.post(servicesPath, { name: 'console-files', image: TINY_HTTP, disk_size_gb: 1, disk_mount_path: '/data' });
    expect(created.status).toBe(201);
    const servicePath = `${servicesPath}/${created.body.id}`;
    await waitForStatus(owner, servicePath, 'running', 60_000);
    const tab = await openTab(browser, p.gatewayUrl);
    const { page } = tab;
    await signIn(page, p.gatewayUrl, p.bootstrap.token);
    await page.goto(`${p.gatewayUrl}/services/${created.body.id}`);
    const backups = page.getByRole('region', { name: 'Disk backups' });
    await backups.getByText('No backup yet.').waitFor();
    await backups.getByRole('button', { name: 'Back up now' }).click();
    const row = backups.locator('tr[data-backup]').first();
    await expect
      .poll(
        () =>
          row
            .locator('.badge')
            .textContent()
            .catch(() => ''),
        { timeout: 60_000 },
      )
      .toBe('completed');
    expect(await row.textContent()).toContain('manual');

    // The schedule: a bad one gets the API's message at its field, then @daily is kept.
    await backups.getByLabel('Backup schedule').fill('not a cron');
    await backups.getByRole('button', { name: 'Set schedule' }).click();
    await backups.locator('[data-field="schedule"] .field-error').waitFor();
    await backups.getByLabel('Backup schedule').fill('@daily');
    await backups.getByLabel('Backups kept').fill('3');
    await backups.getByRole('button', { name: 'Set schedule' }).click();
    await backups.getByText(/@daily \(UTC\), keeping the last 3 scheduled backups; next at/).waitFor();
    expect((await owner.get(`${servicePath}/backups`)).body.schedule).toMatchObject({ schedule: '@daily', retention_count: 3 });
    await checkScreen(page);

    // Restore asks first; then the service goes down and comes back with the restore completed.
    await row.getByRole('button', { name: /^Restore the backup of/ }).click();
    const dialog = page.getByRole('dialog', { name: 'Restore the disk?' });
    await dialog.getByRole('button', { name: 'Restore' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await backups.getByRole('status').filter({ hasText: 'Latest restore' }).locator('.badge').filter({ hasText: 'completed' }).waitFor({ timeout: 90_000 });
    await waitForStatus(owner, servicePath, 'running', 60_000);

    await backups.getByRole('button', { name: 'Remove schedule' }).click();
    await backups.getByText('No schedule: backups are taken only by hand.').waitFor();
    expect(await axe(page)).toEqual([]);
    expect(tab.errors.filter((e) => !/status of 400/.test(e))).toEqual([]);
    expect(await tab.violations()).toEqual([]);
    await tab.context.close();
  }, 300_000);

  it('a Viewer sees no "Create service", and a service without its write sections', async () => {
    const tab = await openTab(browser, p.gatewayUrl, { width: 390, height: 844 });
    const { page } = tab;
    await signIn(page, p.gatewayUrl, viewerKey);
    await page.locator('tr[data-service="console-shop"]').waitFor();
    expect(await page.getByRole('link', { name: 'Create service' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Create service' }).count()).toBe(0);
    await page.locator('tr[data-service="console-shop"]').getByRole('link').click();
    await page.getByRole('heading', { name: 'console-shop' }).waitFor();
    await page.getByRole('heading', { name: 'Environment' }).waitFor();
    // The secret's name replaces its id once the secrets list has loaded too.
    await page.locator('.env-list', { hasText: 'from secret console-svc-secret, key DB_PASSWORD' }).waitFor();
    expect(
      await page
        .getByRole('button', {
          name: /Roll back|Open shell|Save environment|Attach domain|Verify|Detach|Start build|Cancel build|monitoring|Back up now|schedule/,
        })
        .count(),
    ).toBe(0);
    expect(await page.getByRole('heading', { name: 'Shell' }).count()).toBe(0);
    expect(await axe(page)).toEqual([]);
    await noSidewaysScroll(page);
    // The create screen's address, typed in: no form, a sentence why.
    await page.goto(`${p.gatewayUrl}/services/new`);
    await page.getByText('Creating a service needs the Owner or Admin role.').waitFor();
    expect(await page.getByRole('button', { name: 'Create service' }).count()).toBe(0);
    expect(tab.errors).toEqual([]);
    expect(await tab.violations()).toEqual([]);
    await tab.context.close();
  });
});
