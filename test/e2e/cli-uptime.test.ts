// The built `pier` CLI on uptime monitoring: enable (defaults, then every option), show a
// real check of a pier/tiny-http service (through a real edge, as users reach it), an incident once its container is killed, what
// the API and the CLI refuse, disable. The interval floor is lowered to 1 s for it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEdge, until } from '@pier/testing';
import { cleanVpcs, containersOf, dockerCli, TINY_HTTP } from './services-support.ts';
import { startCli, type CliHarness } from './cli-support.ts';

// Checks go through a real edge, as users' requests do.
const edge = testEdge();
let cli: CliHarness;

beforeAll(async () => {
  cli = await startCli({
    env: { compute: { ...edge.env, PIER_UPTIME_MIN_INTERVAL_SECONDS: '1', PIER_UPTIME_TICK_MS: '200' } },
  });
  expect((await cli.login()).code).toBe(0);
  expect((await cli.pier(['services', 'create', 'web', '--image', TINY_HTTP, '--health-check-path', '/healthz', '--wait'])).code).toBe(0);
  expect((await cli.pier(['services', 'create', 'jobs', '--type', 'worker'])).code).toBe(0);
  // The edge routes it (its first sync), so the first check already sees the service.
  const host = new URL((await cli.json(['services', 'show', 'web'])).url).hostname;
  await until(
    () => edge.get(host).catch(() => ({ status: 0 })),
    (r) => r.status === 200,
  );
}, 120_000);

afterAll(async () => {
  await cli?.stop();
  await edge.remove();
  if (cli) await cleanVpcs(cli.platform.bootstrap.vpcId);
});

const shown = () => cli.json(['services', 'uptime', 'show', 'web']);

describe('pier services uptime', () => {
  it('enables with the defaults, then with every option, and shows the checks', async () => {
    expect(await cli.pier(['services', 'uptime', 'show', 'web'])).toMatchObject({ code: 0, stdout: 'Uptime monitoring is off.\n' });
    expect(await cli.pier(['services', 'uptime', 'enable', 'web'])).toMatchObject({
      code: 0,
      stdout: 'Uptime monitoring of web: GET / every 60 s (timeout 10 s, up on 200-399).\n',
    });
    const changed = await cli.pier(['services', 'uptime', 'enable', 'web', '--path', '/healthz', '--interval', '1', '--timeout', '0.5', '--expect', '200-299']);
    expect(changed).toMatchObject({ code: 0, stdout: 'Uptime monitoring of web: GET /healthz every 1 s (timeout 0.5 s, up on 200-299).\n' });

    await until(shown, (m) => m.status === 'up', 15_000);
    const show = await cli.pier(['services', 'uptime', 'show', 'web']);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/^status\s+up$/m);
    expect(show.stdout).toMatch(/^check\s+GET \/healthz every 1 s \(timeout 0\.5 s, up on 200-299\)$/m);
    expect(show.stdout).toMatch(/^last result\s+200 in \d+ ms$/m);
    expect(show.stdout).toMatch(/^uptime 24h\s+100%$/m);
    // Checks began moments ago: in this hour (and the last one, when the test spans the hour).
    expect(show.stdout).toMatch(/^by hour\s+·{22}[·█]█ {2}\(oldest first/m);
    expect(show.stdout).toContain('No incidents.');
  });

  it('shows the incident once the replica is killed', async () => {
    const [replica] = await containersOf((await cli.json(['services', 'show', 'web'])).id);
    await dockerCli('kill', replica!);
    const down = await until(shown, (m) => m.status === 'down', 20_000);
    const show = await cli.pier(['services', 'uptime', 'show', 'web']);
    expect(show.stdout).toMatch(/^status\s+down$/m);
    expect(show.stdout).toMatch(/^STARTED\s+ENDED\s+REASON$/m);
    expect(show.stdout).toContain(`ongoing  ${down.incidents[0].reason}`);
  });

  it('says what the API refuses, and what is not a status range', async () => {
    expect(await cli.pier(['services', 'uptime', 'enable', 'web', '--path', 'healthz'])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('(invalid_request, field path)'),
    });
    expect(await cli.pier(['services', 'uptime', 'enable', 'jobs'])).toMatchObject({ code: 1, stderr: expect.stringContaining('(not_a_web_service)') });
    expect((await cli.pier(['services', 'uptime', 'enable', 'web', '--expect', '2xx'])).code).toBe(2);
    expect((await cli.pier(['services', 'uptime', 'enable', 'web', '--timeout', 'soon'])).code).toBe(2);
  });

  it('disables', async () => {
    expect(await cli.pier(['services', 'uptime', 'disable', 'web'])).toMatchObject({ code: 0, stdout: 'Uptime monitoring of web is off.\n' });
    expect(await shown()).toMatchObject({ enabled: false, status: 'unknown', incidents: [] });
  });
});
