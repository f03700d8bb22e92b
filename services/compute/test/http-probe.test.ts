// The uptime probe on real HTTP: a pier/tiny-http container reached through its address
// while the URL names a host that does not exist (as the edge is reached), an HTTPS server
// with a certificate of a private CA (SNI and the certificate's name come from the URL),
// a redirect that must not be followed, a server that never answers, one that never stops
// sending, and a port nobody listens on.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docker, freePort, testLabels, until } from '@pier/testing';
import { probe } from '../src/cluster/http-probe.ts';
import { TINY_HTTP } from './support.ts';

const run = promisify(execFile);
const HOST = 'web-1a2b3c4d.apps.test';

let dir: string;
let containerId: string;
let containerIp: string;
const servers: http.Server[] = [];
const sockets = new Set<net.Socket>();

async function listen(server: http.Server): Promise<number> {
  servers.push(server);
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

/** A CA and a certificate it signed for HOST, made with openssl in a temporary directory. */
async function makeCertificates(): Promise<{ ca: string; key: string; cert: string }> {
  const f = (name: string) => path.join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=Pier test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  await run('openssl', ['req', ...ec, '-keyout', f('leaf.key'), '-out', f('leaf.csr'), '-subj', `/CN=${HOST}`]);
  await writeFile(f('leaf.ext'), `subjectAltName=DNS:${HOST}\nextendedKeyUsage=serverAuth\n`);
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    f('leaf.csr'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('leaf.pem'),
    '-days',
    '2',
    '-extfile',
    f('leaf.ext'),
  ]);
  const [ca, key, cert] = await Promise.all(['ca.pem', 'leaf.key', 'leaf.pem'].map((n) => readFile(f(n), 'utf8')));
  return { ca: ca!, key: key!, cert: cert! };
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'pier-probe-'));
  const container = await docker.createContainer({ Image: TINY_HTTP, Labels: testLabels() });
  containerId = container.id;
  await container.start();
  containerIp = (await container.inspect()).NetworkSettings.IPAddress;
  // busybox httpd starts in a moment; wait until it answers before judging the probe.
  await until(
    () => probe(`http://${containerIp}:8080/healthz`, { timeoutMs: 1000 }),
    (r) => 'statusCode' in r,
    15_000,
  );
}, 60_000);

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  if (containerId)
    await docker
      .getContainer(containerId)
      .remove({ force: true })
      .catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
});

describe('probe over plain HTTP', () => {
  it('connects to the given address while the URL names the host: a service container answers', async () => {
    const target = { connectTo: { host: containerIp, port: 8080 }, timeoutMs: 3000 };
    const ok = await probe(`http://${HOST}/healthz`, target);
    expect(ok).toMatchObject({ statusCode: 200 });
    expect(ok.latencyMs).toBeGreaterThanOrEqual(0);
    expect(ok.latencyMs).toBeLessThan(3000);
    expect(await probe(`http://${HOST}/no-such-page`, target)).toMatchObject({ statusCode: 404 });
  });

  it('sends the URL host as Host and asks once, without following a redirect', async () => {
    const seen: { path: string; host: string | undefined; connection: string | undefined }[] = [];
    const port = await listen(
      http.createServer((req, res) => {
        seen.push({ path: req.url!, host: req.headers.host, connection: req.headers.connection });
        if (req.url === '/moved') res.writeHead(302, { location: '/landed' }).end();
        else if (req.url === '/away') res.writeHead(301, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
        else res.writeHead(200).end('landed');
      }),
    );
    const target = { connectTo: { host: '127.0.0.1', port }, timeoutMs: 3000 };
    expect(await probe(`http://${HOST}:8080/moved`, target)).toMatchObject({ statusCode: 302 });
    expect(await probe(`http://${HOST}/away`, target)).toMatchObject({ statusCode: 301 });
    expect(seen).toEqual([
      { path: '/moved', host: `${HOST}:8080`, connection: 'close' },
      { path: '/away', host: HOST, connection: 'close' },
    ]);
  });

  it('gives up after the timeout on a server that never answers', async () => {
    const port = await listen(http.createServer(() => undefined));
    const r = await probe(`http://${HOST}/`, { connectTo: { host: '127.0.0.1', port }, timeoutMs: 300 });
    expect(r).toMatchObject({ error: 'timed out after 0.3 s' });
    expect(r.latencyMs).toBeGreaterThanOrEqual(290);
    expect(r.latencyMs).toBeLessThan(2000);
  });

  it('answers at the headers and drops a body that never ends', async () => {
    let closed = false;
    const port = await listen(
      http.createServer((req, res) => {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const chunk = Buffer.alloc(64 * 1024, 1);
        const timer = setInterval(() => res.write(chunk), 5);
        req.socket.on('close', () => {
          clearInterval(timer);
          closed = true;
        });
      }),
    );
    const r = await probe(`http://${HOST}/stream`, { connectTo: { host: '127.0.0.1', port }, timeoutMs: 10_000 });
    expect(r).toMatchObject({ statusCode: 200 });
    // The probe hung up long before its 10 s deadline.
    await until(
      async () => closed,
      (c) => c,
      3000,
      20,
    );
  });

  it('says why there is no answer: refused, an unknown name, an abort, a bad port or URL', async () => {
    const port = await freePort();
    expect(await probe(`http://${HOST}/`, { connectTo: { host: '127.0.0.1', port }, timeoutMs: 2000 })).toMatchObject({ error: 'connection refused' });
    expect(await probe(`http://${HOST}/`, { timeoutMs: 5000 })).toMatchObject({ error: expect.stringMatching(/^name not resolved|^timed out/) });
    const hang = await listen(http.createServer(() => undefined));
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 100);
    expect(await probe(`http://${HOST}/`, { connectTo: { host: '127.0.0.1', port: hang }, timeoutMs: 5000, signal: stop.signal })).toMatchObject({
      error: 'stopped',
    });
    // Refused by node before anything is sent: still an answer, never a throw.
    expect(await probe(`http://${HOST}/`, { connectTo: { host: '127.0.0.1', port: 70_000 }, timeoutMs: 100 })).toMatchObject({
      error: expect.stringMatching(/^request refused: .*70000/),
    });
    expect(await probe('ftp://example.test/', { timeoutMs: 100 })).toMatchObject({ error: expect.stringContaining('not an http(s) URL') });
    expect(await probe('http://user:pw@example.test/', { timeoutMs: 100 })).toMatchObject({ error: 'the URL carries credentials' });
  });
});

describe('probe over HTTPS', () => {
  let port: number;
  let ca: string;
  const seen: { servername: string | false | null; host: string | undefined }[] = [];

  beforeAll(async () => {
    const certs = await makeCertificates();
    ca = certs.ca;
    port = await listen(
      https.createServer({ key: certs.key, cert: certs.cert }, (req, res) => {
        seen.push({ servername: (req.socket as TLSSocket).servername, host: req.headers.host });
        res.writeHead(204).end();
      }),
    );
  });

  it('sends the URL host as SNI and Host, and trusts the extra CA', async () => {
    const r = await probe(`https://${HOST}/healthz`, { connectTo: { host: '127.0.0.1', port }, ca, timeoutMs: 3000 });
    expect(r).toMatchObject({ statusCode: 204 });
    expect(seen.at(-1)).toEqual({ servername: HOST, host: HOST });
  });

  it("refuses a certificate it cannot trust, or one for another name (checked against the URL's host, not the address)", async () => {
    const count = seen.length;
    const untrusted = await probe(`https://${HOST}/`, { connectTo: { host: '127.0.0.1', port }, timeoutMs: 3000 });
    expect(untrusted).toMatchObject({ error: expect.stringMatching(/^TLS: .*(self-signed|issuer|verify)/i) });
    const otherName = await probe('https://other.apps.test/', { connectTo: { host: '127.0.0.1', port }, ca, timeoutMs: 3000 });
    expect(otherName).toMatchObject({ error: expect.stringMatching(/^TLS: .*other\.apps\.test/) });
    // Neither request was sent.
    expect(seen.length).toBe(count);
  });
});
