// The built `pier` CLI on custom domains, through the gateway, with a real edge, a real
// authoritative DNS server (BIND) and a real ACME server (Pebble): add prints the records to
// create, verify says what DNS lacks and then makes the domain active, list, remove.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startAcmeServer, startAuthoritativeDns, testEdge, until, type AcmeTestServer, type AuthoritativeDns } from '@pier/testing';
import { cleanVpcs, TINY_HTTP } from './services-support.ts';
import { startCli, type CliHarness } from './cli-support.ts';

const edge = testEdge('apps.example.test');
const HOST = 'shop.example.test';
let cli: CliHarness;
let dns: AuthoritativeDns;
let acme: AcmeTestServer;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'pier-cli-domains-'));
  dns = await startAuthoritativeDns(['example.test']);
  acme = await startAcmeServer(dns.address);
  await writeFile(path.join(dir, 'acme-ca.pem'), acme.listenerCaPem);
  cli = await startCli({
    env: {
      compute: { ...edge.env, PIER_DNS_RESOLVERS: dns.address, PIER_ACME_DIRECTORY_URL: acme.directoryUrl, PIER_ACME_CA_FILE: path.join(dir, 'acme-ca.pem') },
    },
  });
  expect((await cli.login()).code).toBe(0);
  expect((await cli.pier(['services', 'create', 'web', '--image', TINY_HTTP, '--wait'])).code).toBe(0);
}, 120_000);

afterAll(async () => {
  await cli?.stop();
  await edge.remove();
  if (cli) await cleanVpcs(cli.platform.bootstrap.vpcId);
  await acme?.stop();
  await dns?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('pier services domains', () => {
  it('shows the service URL, adds a domain and prints the records to create', async () => {
    const web = await cli.json(['services', 'show', 'web']);
    expect(web.url).toMatch(/^https:\/\/web-[0-9a-f]{8}\.apps\.example\.test$/);
    expect((await cli.pier(['services', 'show', 'web'])).stdout).toContain(web.url);
    const added = await cli.pier(['services', 'domains', 'add', 'web', HOST]);
    expect(added.code).toBe(0);
    expect(added.stdout).toContain(`Attached ${HOST} to web`);
    expect(added.stdout).toMatch(new RegExp(`TXT\\s+_pier-challenge\\.${HOST.replace(/\./g, '\\.')}\\s+pier-verify=`));
    expect(added.stdout).toMatch(new RegExp(`CNAME\\s+${HOST.replace(/\./g, '\\.')}\\s+web-[0-9a-f]{8}\\.apps\\.example\\.test`));
    // Only a claim until verified: it says when it lapses.
    expect(added.stdout).toMatch(/Verify before \d{4}-\d\d-\d\dT[\d:.]+Z, or the claim lapses/);
  });

  it('verify exits 1 and says what DNS lacks, then succeeds once the records exist', async () => {
    const failed = await cli.pier(['services', 'domains', 'verify', 'web', HOST]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain('expected "pier-verify=');
    expect(failed.stdout).toMatch(/claim expires\s+\d{4}-/);
    const [d] = await cli.json(['services', 'domains', 'list', 'web']);
    const web = await cli.json(['services', 'show', 'web']);
    const serviceHost = new URL(web.url).hostname;
    await dns.set(`_pier-challenge.${HOST}`, 'TXT', [d.verification.value]);
    await dns.set(HOST, 'CNAME', [serviceHost]);
    await dns.set(serviceHost, 'A', [await edge.ip()]);
    const ok = await cli.pier(['services', 'domains', 'verify', 'web', HOST]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/status\s+active/);
    expect(ok.stdout).toMatch(/certificate\s+issued by Pebble/);
    const listed = await cli.pier(['services', 'domains', 'list', 'web']);
    expect(listed.stdout).toMatch(new RegExp(`${HOST.replace(/\./g, '\\.')}\\s+active\\s+issued`));
    const page = await until(
      () => edge.get(HOST),
      (r) => r.status === 200,
    );
    expect(page.body).toContain('hello from pier/tiny-http');
  });

  it('removes a domain by hostname; an unknown one is an error', async () => {
    const removed = await cli.pier(['services', 'domains', 'remove', 'web', HOST]);
    expect(removed).toMatchObject({ code: 0, stdout: `Removed ${HOST} from web.\n` });
    expect((await cli.pier(['services', 'domains', 'list', 'web'])).stdout).toContain('No custom domains.');
    const unknown = await cli.pier(['services', 'domains', 'remove', 'web', HOST]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(`no domain ${HOST} on this service`);
    expect((await edge.get(HOST)).status).toBe(404);
  });
});
