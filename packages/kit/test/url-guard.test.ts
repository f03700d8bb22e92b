// The URL guard against the corpus of refused URLs, through a real DNS server for the names,
// and real HTTP servers for redirects and for pinning (DNS rebinding).
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CORPUS_DNS, REFUSED_URLS, TestDnsServer } from '@pier/testing';
import { UrlGuard, UrlRefusedError, refusedRange } from '../src/index.ts';

let dns: TestDnsServer;
let server: http.Server;
let port: number;

beforeAll(async () => {
  dns = await new TestDnsServer().start();
  for (const [name, records] of Object.entries(CORPUS_DNS)) dns.set(name, records);
  server = http.createServer((req, res) => {
    const to = /^\/to\/(.*)$/.exec(req.url ?? '')?.[1];
    if (to) {
      res.writeHead(302, { location: decodeURIComponent(to) });
      return res.end();
    }
    if (req.url === '/loop') {
      res.writeHead(301, { location: '/loop' });
      return res.end();
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`served ${req.url} for host ${req.headers.host}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  await dns?.stop();
  await new Promise((resolve) => server?.close(resolve));
});

const strict = () => new UrlGuard({ allowHttp: true, resolvers: [dns.address], field: 'repo_url' });

async function refusal(guard: UrlGuard, url: string): Promise<UrlRefusedError> {
  const err = await guard.check(url).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof UrlRefusedError)) throw new Error(`${url} was not refused (${String(err)})`);
  return err;
}

describe('the URL guard', () => {
  it(`refuses every URL of the corpus (${REFUSED_URLS.length}), saying why and naming the field`, async () => {
    expect(REFUSED_URLS.length).toBeGreaterThanOrEqual(30);
    const guard = strict();
    for (const { url, why } of REFUSED_URLS) {
      const err = await refusal(guard, url);
      expect(err.message, url).toMatch(/^repo_url: /);
      expect(err.message, url).toMatch(why);
      expect(err.details).toEqual({ field: 'repo_url' });
      expect(err.code).toBe('url_not_allowed');
    }
  });

  it('allows https to public hosts (literal or by name) and pins the checked address', async () => {
    const guard = new UrlGuard({ resolvers: [dns.address] });
    expect(await guard.check('https://93.184.216.34/pier/app.git')).toMatchObject({
      host: '93.184.216.34',
      port: 443,
      address: '93.184.216.34',
      literal: true,
    });
    expect(await guard.check('https://public.pier.test:8443/pier/app.git')).toMatchObject({
      host: 'public.pier.test',
      port: 8443,
      address: '93.184.216.34',
      family: 4,
      literal: false,
    });
    // http is refused unless configured.
    expect((await refusal(guard, 'http://public.pier.test/app.git')).message).toMatch(/only https URLs are/);
  });

  it('lets an allowlisted host through, and only that host', async () => {
    const guard = new UrlGuard({ allowHttp: true, allowedHosts: ['127.0.0.1', 'LOOPBACK.pier.test'], resolvers: [dns.address] });
    expect(await guard.check(`http://127.0.0.1:${port}/x`)).toMatchObject({ address: '127.0.0.1', port });
    expect(await guard.check(`http://loopback.pier.test:${port}/x`)).toMatchObject({ address: '127.0.0.1' });
    await refusal(guard, 'http://internal.pier.test/x');
    await refusal(guard, 'http://[::1]/x');
    // The allowlist does not excuse credentials or another scheme.
    await refusal(guard, `http://u:p@127.0.0.1:${port}/x`);
    await refusal(guard, 'file://127.0.0.1/etc/passwd');
  });

  it('checks every redirect the same way', async () => {
    const guard = new UrlGuard({ allowHttp: true, allowedHosts: ['127.0.0.1'], resolvers: [dns.address] });
    const start = await guard.check(`http://127.0.0.1:${port}/to/${encodeURIComponent(`http://127.0.0.1:${port}/final`)}`);
    const ok = await guard.request(start);
    expect(ok.final.url.pathname).toBe('/final');
    expect(ok.response.statusCode).toBe(200);
    ok.response.resume();

    for (const target of ['http://169.254.169.254/latest/meta-data/', 'http://10.0.0.1/', 'http://metadata.pier.test/', 'file:///etc/passwd']) {
      const hop = await guard.check(`http://127.0.0.1:${port}/to/${encodeURIComponent(target)}`);
      const err = await guard.request(hop).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, target).toBeInstanceOf(UrlRefusedError);
      expect((err as Error).message).toContain(`redirects to ${new URL(target).href}, which is refused`);
    }
    const loop = await guard.request(await guard.check(`http://127.0.0.1:${port}/loop`)).catch((e: Error) => e);
    expect((loop as Error).message).toMatch(/redirected more than 5 times/);
  });

  it('connects to the address it checked, whatever the name resolves to later (DNS rebinding)', async () => {
    dns.set('rebind.pier.test', { A: ['127.0.0.1'] });
    const guard = new UrlGuard({ allowHttp: true, allowedHosts: ['rebind.pier.test'], resolvers: [dns.address] });
    const checked = await guard.check(`http://rebind.pier.test:${port}/pinned`);
    const asked = dns.queries.filter((q) => q.startsWith('rebind.pier.test')).length;
    // The name now points elsewhere; the request still goes to the checked address, with no new lookup.
    dns.set('rebind.pier.test', { A: ['10.9.9.9'] });
    const { response } = await guard.request(checked);
    let body = '';
    for await (const chunk of response) body += chunk;
    expect(body).toBe(`served /pinned for host rebind.pier.test:${port}`);
    expect(dns.queries.filter((q) => q.startsWith('rebind.pier.test')).length).toBe(asked);
  });

  it('classifies addresses in every notation ipaddr.js parses', () => {
    expect(refusedRange('8.8.8.8')).toBeNull();
    expect(refusedRange('2606:4700:4700::1111')).toBeNull();
    expect(refusedRange('::ffff:8.8.8.8')).toBeNull();
    expect(refusedRange('::ffff:a9fe:a9fe')).toEqual({ address: '169.254.169.254', what: expect.stringMatching(/link-local/) });
    expect(refusedRange('fd12:3456::1')?.what).toMatch(/unique-local/);
    expect(refusedRange('not-an-ip')?.what).toBe('not an IP address');
  });
});
