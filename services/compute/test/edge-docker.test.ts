// The edge on the docker adapter, for real: the pier/edge container (Caddy) that compute runs,
// a real authoritative DNS server (BIND) and a real ACME server (Pebble) on the test network.
// A web service answers at its public host through the edge; a custom domain is verified
// against DNS, gets a certificate over HTTP-01 and is served over TLS that curl validates.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { startAcmeServer, startAuthoritativeDns, testEdge, type AcmeTestServer, type AuthoritativeDns } from '@pier/testing';
import { startCompute, until, cleanDocker, docker, TINY_HTTP, type Compute } from './support.ts';

const exec = promisify(execFile);
// Inside the DNS server's one zone: an authoritative server answers a CNAME with its target's
// address only when both are in the same zone (a public resolver would chase it anyway).
const APPS = 'apps.example.test';
const BLOCKED = 'blocked.example.test';
const edge = testEdge(APPS);
const EDGE = edge.name;

let c: Compute;
let dns: AuthoritativeDns;
let acme: AcmeTestServer;
let dir: string;
let edgeIp: string;
let web: { id: string; name: string; url: string };

/** An HTTP request to the edge's own address with a Host header: what a client whose DNS points here sends. */
function viaEdge(host: string, pathname = '/'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: edgeIp, port: 80, path: pathname, headers: { host }, timeout: 10_000 }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function curlTls(hostname: string, caFile: string): Promise<string> {
  const { stdout } = await exec('curl', [
    '--silent',
    '--show-error',
    '--fail',
    '--max-time',
    '10',
    '--resolve',
    `${hostname}:443:${edgeIp}`,
    '--cacert',
    caFile,
    `https://${hostname}/`,
  ]);
  return stdout;
}

/** A command's standard output in the edge container. */
async function inEdge(cmd: string[]): Promise<string> {
  const exec = await docker.getContainer(EDGE).exec({ Cmd: cmd, AttachStdout: true });
  const stream = await exec.start({});
  const chunks: Buffer[] = [];
  const sink = { write: (c: Buffer) => chunks.push(c) } as unknown as NodeJS.WritableStream;
  docker.modem.demuxStream(stream, sink, sink);
  await new Promise((resolve) => stream.on('end', resolve));
  return Buffer.concat(chunks).toString('utf8');
}

async function rows(sql: string, params: unknown[] = []): Promise<any[]> {
  const client = new pg.Client({ connectionString: c.db.adminUrl });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'pier-edge-test-'));
  dns = await startAuthoritativeDns(['example.test']);
  acme = await startAcmeServer(dns.address, { blocked: [BLOCKED] });
  await writeFile(path.join(dir, 'acme-ca.pem'), acme.listenerCaPem);
  c = await startCompute({
    ...edge.env,
    PIER_DNS_RESOLVERS: dns.address,
    PIER_ACME_DIRECTORY_URL: acme.directoryUrl,
    PIER_ACME_CA_FILE: path.join(dir, 'acme-ca.pem'),
    PIER_DOMAINS_PER_SERVICE: '3',
  });
  const created = await c.post(c.base, { name: 'web', image: TINY_HTTP, min_replicas: 2, health_check_path: '/healthz' });
  expect(created.status).toBe(201);
  web = created.body;
  await until(
    () => c.get(`${c.base}/${web.id}`).then((r) => r.body.status),
    (s) => s === 'running',
    60_000,
  );
  const running = await until(
    () =>
      docker
        .getContainer(EDGE)
        .inspect()
        .catch(() => undefined),
    (i) => Boolean(i?.State.Running),
  );
  edgeIp = running!.NetworkSettings.Networks.bridge!.IPAddress;
  // What a public DNS would say: the service's host is the edge.
  await dns.set(new URL(web.url).hostname, 'A', [edgeIp]);
}, 120_000);

afterAll(async () => {
  await c?.stop();
  await edge.remove();
  if (c) await cleanDocker(c.vpcId);
  await acme?.stop();
  await dns?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

describe('public URLs through the edge', () => {
  it('gives every web service https://<name>-<short id>.<apps domain>, and none to a worker', async () => {
    expect(web.url).toBe(`https://web-${web.id.slice(0, 8)}.${APPS}`);
    const worker = await c.post(c.base, { name: 'jobs', service_type: 'worker' });
    expect(worker.body.url).toBeNull();
  });

  it('routes by Host to the running replicas, and over TLS by SNI', async () => {
    const host = new URL(web.url).hostname;
    const r = await until(
      () => viaEdge(host).catch(() => ({ status: 0, body: '' })),
      (x) => x.status === 200,
    );
    expect(r.body).toContain('hello from pier/tiny-http');
    // Both replicas answer (round robin): tiny-http's CGI prints its container's hostname.
    const seen = new Set<string>();
    for (let i = 0; i < 8; i++) seen.add((await viaEdge(host, '/cgi-bin/env')).body.match(/HOSTNAME=(\S+)/)?.[1] ?? '?');
    expect(seen.size).toBe(2);
    // The apps domain's certificate comes from the edge's internal CA here: TLS by SNI works,
    // the chain is the operator's choice (PIER_EDGE_APPS_CERT_FILE).
    const { stdout } = await exec('curl', ['-sS', '--insecure', '--max-time', '10', '--resolve', `${host}:443:${edgeIp}`, `https://${host}/`]);
    expect(stdout).toContain('hello from pier/tiny-http');
  });

  it('answers a clear 404 for an unknown host and 503 for a service with no replica', async () => {
    const unknown = await viaEdge('nobody.example.org');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatch(/no service answers at nobody\.example\.org/);
    // A client that dialled the edge's address with it as Host: a 404 at once too.
    const t = Date.now();
    expect((await viaEdge('10.1.2.3')).status).toBe(404);
    expect(Date.now() - t).toBeLessThan(1_000);
    const idle = await c.post(c.base, { name: 'idle' });
    const host = new URL(idle.body.url).hostname;
    const r = await until(
      () => viaEdge(host),
      (x) => x.status !== 404,
      10_000,
    );
    expect(r.status).toBe(503);
    expect(r.body).toMatch(/has no healthy replica/);
  });
});

describe('custom domains', () => {
  const hostname = 'www.example.test';
  let domain: any;

  it('validates hostnames: FQDN, lowercase, punycode, no wildcard, not under the apps domain', async () => {
    const bad = async (h: string, code: string) => {
      const r = await c.post(`${c.base}/${web.id}/domains`, { hostname: h });
      expect(r.status, h).toBe(400);
      expect(r.body).toMatchObject({ code, field: 'hostname' });
    };
    await bad('*.example.test', 'wildcard_not_supported');
    await bad(`shop.${APPS}`, 'reserved_hostname');
    await bad('localhost', 'invalid_hostname');
    await bad('https://www.example.test/', 'invalid_hostname');
    await bad('-bad-.example.test', 'invalid_hostname');
    await bad('10.0.0.1', 'invalid_hostname');
    const unicode = await c.post(`${c.base}/${web.id}/domains`, { hostname: 'Bücher.Example.test' });
    expect(unicode.status).toBe(201);
    expect(unicode.body.hostname).toBe('xn--bcher-kva.example.test');
    expect((await c.request('DELETE', `${c.base}/${web.id}/domains/${unicode.body.id}`)).status).toBe(204);
  });

  it('attaches a domain as pending, with the records to create', async () => {
    const r = await c.post(`${c.base}/${web.id}/domains`, { hostname: 'WWW.example.test.' });
    expect(r.status).toBe(201);
    domain = r.body;
    expect(domain).toMatchObject({
      hostname,
      status: 'pending',
      verification: { type: 'TXT', name: `_pier-challenge.${hostname}` },
      routing: [{ type: 'CNAME', name: hostname, value: new URL(web.url).hostname }],
      tls: { status: 'pending', issuer: null, expires_at: null, error: null },
      last_checked_at: null,
      error: null,
    });
    expect(domain.verification.value).toMatch(/^pier-verify=[0-9a-f]{32}$/);
    const list = await c.get(`${c.base}/${web.id}/domains`);
    expect(list.body.items.map((d: any) => d.id)).toEqual([domain.id]);
  });

  it('refuses a hostname twice on one service, lets other workspaces claim an unverified one, and caps domains per service', async () => {
    const other = await c.request('POST', `${c.base}/${web.id}/domains`, { hostname }, {});
    expect(other.status).toBe(409);
    expect(other.body.code).toBe('hostname_taken');
    // A pending claim holds nothing: another workspace may claim the name too, and whoever
    // verifies first wins it (domain-claims.test.ts); a verified one is theirs alone.
    const scope = { workspaceId: randomUUID(), vpcId: randomUUID() };
    const base = `/api/v1/workspaces/${scope.workspaceId}/vpcs/${scope.vpcId}/services`;
    const theirs = await c.request('POST', base, { name: 'theirs' }, { scope });
    expect(theirs.status).toBe(201);
    const claimed = await c.request('POST', `${base}/${theirs.body.id}/domains`, { hostname }, { scope });
    expect(claimed.status).toBe(201);
    expect(claimed.body.verification.value).not.toBe(domain.verification.value);
    expect((await c.request('DELETE', `${base}/${theirs.body.id}/domains/${claimed.body.id}`, undefined, { scope })).status).toBe(204);
    await cleanDocker(scope.vpcId);
    // The cap (3 in this test): two more fit, the fourth is refused.
    const extra = [];
    for (const h of ['a.example.test', 'b.example.test']) extra.push((await c.post(`${c.base}/${web.id}/domains`, { hostname: h })).body.id);
    const over = await c.post(`${c.base}/${web.id}/domains`, { hostname: 'c.example.test' });
    expect(over.status).toBe(409);
    expect(over.body.code).toBe('domain_limit');
    for (const id of extra) expect((await c.request('DELETE', `${c.base}/${web.id}/domains/${id}`)).status).toBe(204);
  });

  it('says what DNS should hold and what it found when it is wrong', async () => {
    let r = await c.post(`${c.base}/${web.id}/domains/${domain.id}/verify`);
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('failed');
    expect(r.body.error).toContain(`TXT _pier-challenge.${hostname}: expected "${domain.verification.value}", found no TXT record`);
    expect(r.body.error).toContain('found no CNAME, A or AAAA record');
    expect(r.body.last_checked_at).not.toBeNull();

    await dns.set(`_pier-challenge.${hostname}`, 'TXT', ['pier-verify=somebody-else']);
    await dns.set(hostname, 'CNAME', ['elsewhere.example.test']);
    r = await c.post(`${c.base}/${web.id}/domains/${domain.id}/verify`);
    expect(r.body.status).toBe('failed');
    expect(r.body.error).toContain('found "pier-verify=somebody-else"');
    expect(r.body.error).toContain(`found CNAME ${hostname} -> elsewhere.example.test`);
    // Not routed while it fails.
    expect((await viaEdge(hostname)).status).toBe(404);
  });

  it('verifies, routes, gets a certificate from the ACME server and serves it', async () => {
    await dns.set(`_pier-challenge.${hostname}`, 'TXT', [domain.verification.value]);
    await dns.set(hostname, 'CNAME', [new URL(web.url).hostname]);
    const r = await c.post(`${c.base}/${web.id}/domains/${domain.id}/verify`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'active', error: null, tls: { status: 'issued', error: null } });
    expect(r.body.tls.issuer).toMatch(/Pebble/);
    expect(new Date(r.body.tls.expires_at).getTime()).toBeGreaterThan(Date.now());
    // curl, validating the chain against Pebble's root and the name against the certificate.
    await writeFile(path.join(dir, 'pebble-root.pem'), await acme.issuingRootPem());
    const body = await until(
      () => curlTls(hostname, path.join(dir, 'pebble-root.pem')).catch((e: Error) => e.message),
      (b) => b.includes('hello from pier/tiny-http'),
      15_000,
    );
    expect(body).toContain('hello from pier/tiny-http');
    const events = await rows(`select kind from compute.outbox where kind like 'service.domain.%' order by id`);
    expect(events.map((e) => e.kind)).toEqual(expect.arrayContaining(['service.domain.added', 'service.domain.failed', 'service.domain.active']));
  });

  it("ends an ACME failure in a clear state with the CA's reason", async () => {
    const r0 = await c.post(`${c.base}/${web.id}/domains`, { hostname: BLOCKED });
    await dns.set(`_pier-challenge.${BLOCKED}`, 'TXT', [r0.body.verification.value]);
    await dns.set(BLOCKED, 'CNAME', [new URL(web.url).hostname]);
    const r = await c.post(`${c.base}/${web.id}/domains/${r0.body.id}/verify`);
    expect(r.body.status).toBe('failed');
    expect(r.body.tls.status).toBe('failed');
    expect(r.body.tls.error).toMatch(/certificate not issued: .*(forbidden|policy|blocked)/i);
    expect(r.body.error).toBe(r.body.tls.error);
    expect((await c.request('DELETE', `${c.base}/${web.id}/domains/${r0.body.id}`)).status).toBe(204);
  });

  it('renews certificates before expiry without a call (a margin longer than their life, after a restart)', async () => {
    const before = (await c.get(`${c.base}/${web.id}/domains`)).body.items.find((d: any) => d.id === domain.id);
    const account = await inEdge(['cat', '/data/acme-account.key']);
    expect(account).toContain('PRIVATE KEY');
    await c.restart({ PIER_ACME_RENEW_BEFORE_DAYS: '36500' });
    const after = await until(
      () => c.get(`${c.base}/${web.id}/domains`).then((r) => r.body.items.find((d: any) => d.id === domain.id)),
      (d) => d.updated_at !== before.updated_at && d.tls.status === 'issued',
      30_000,
    );
    expect(after.status).toBe('active');
    // The same ACME account across restarts: its key is kept in the edge's volume.
    expect(await inEdge(['cat', '/data/acme-account.key'])).toBe(account);
    await c.restart({ PIER_ACME_RENEW_BEFORE_DAYS: '30' });
    expect(await curlTls(hostname, path.join(dir, 'pebble-root.pem'))).toContain('hello from pier/tiny-http');
  });

  it('detaches: the hostname stops routing and its certificate leaves the edge', async () => {
    expect((await c.request('DELETE', `${c.base}/${web.id}/domains/${domain.id}`)).status).toBe(204);
    // The edge asks the route DNS again within a quarter of a second (caddy-config.ts).
    const t = Date.now();
    await until(
      () => viaEdge(hostname),
      (x) => x.status === 404,
      2_000,
    );
    expect(Date.now() - t).toBeLessThan(1_000);
    expect(await inEdge(['ls', '/data/certs'])).not.toContain(hostname);
    expect((await c.get(`${c.base}/${web.id}/domains`)).body.items).toEqual([]);
  });

  it('a deleted service leaves the edge with its domains', async () => {
    const r = await c.post(`${c.base}/${web.id}/domains`, { hostname: 'gone.example.test' });
    expect(r.status).toBe(201);
    expect((await c.request('DELETE', `${c.base}/${web.id}`)).status).toBe(202);
    const host = new URL(web.url).hostname;
    await until(
      () => viaEdge(host),
      (x) => x.status === 404,
      30_000,
    );
    expect(await rows('select hostname from compute.domains')).toEqual([]);
  });
});
