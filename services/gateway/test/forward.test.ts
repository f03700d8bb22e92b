import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '@pier/kit';
import { Forwarder } from '../src/http/forward.ts';

const servers: http.Server[] = [];
const agents: http.Agent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) a.destroy();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function listen(handler: http.RequestListener): Promise<number> {
  const server = http.createServer(handler);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

/** An upstream that echoes what it received, and a gateway-like front that forwards to it. */
async function setUp(upstream: http.RequestListener): Promise<{ port: number; sockets: Set<unknown> }> {
  const sockets = new Set<unknown>();
  const upPort = await listen((req, res) => {
    sockets.add(req.socket);
    upstream(req, res);
  });
  const agent = new http.Agent({ keepAlive: true });
  agents.push(agent);
  const forwarder = new Forwarder('compute', `http://127.0.0.1:${upPort}`, createLogger('test', 'silent'), 5000, agent);
  const port = await listen((req, res) => {
    res.setHeader('x-request-id', 'rid-1');
    forwarder.forward(req, res, { requestId: 'rid-1', identity: 'signed-identity', clientAddress: '127.0.0.1' });
  });
  return { port, sockets };
}

function send(port: number, options: http.RequestOptions, body?: string): Promise<{ status: number; raw: string[]; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, agent: false, ...options }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, raw: res.rawHeaders, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('Forwarder (the hot path proxy)', () => {
  it('forwards the request without the bearer token, hop-by-hop fields or a client-sent identity, and adds the gateway’s', async () => {
    const { port } = await setUp((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ url: req.url, method: req.method, headers: req.headers }));
    });
    const res = await send(port, {
      method: 'GET',
      path: '/api/v1/x?y=1',
      headers: {
        authorization: 'Bearer secret',
        'x-pier-identity': 'forged',
        connection: 'close',
        'keep-alive': 'timeout=1',
        'x-forwarded-for': '203.0.113.9',
        'x-custom': 'kept',
      },
    });
    const seen = JSON.parse(res.body) as { url: string; method: string; headers: Record<string, string> };
    expect(seen.url).toBe('/api/v1/x?y=1');
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.headers['x-pier-identity']).toBe('signed-identity');
    expect(seen.headers['x-request-id']).toBe('rid-1');
    expect(seen.headers['x-custom']).toBe('kept');
    expect(seen.headers['keep-alive']).toBeUndefined();
    // The client's Connection: close is about its own connection, not the pooled one.
    expect(seen.headers.connection).toBe('keep-alive');
    expect(seen.headers['x-forwarded-for']).toBe('203.0.113.9,127.0.0.1');
    expect(seen.headers['x-forwarded-proto']).toBe('http');
    expect(seen.headers['x-forwarded-port']).toBe(String(port));
    expect(seen.headers['x-forwarded-host']).toBe(`127.0.0.1:${port}`);
  });

  it('reuses one upstream socket for clients that each close their own connection', async () => {
    const { port, sockets } = await setUp((_req, res) => res.end('ok'));
    for (let i = 0; i < 5; i++) expect((await send(port, { path: '/a', headers: { connection: 'close' } })).status).toBe(200);
    expect(sockets.size).toBe(1);
  });

  it('passes the status, repeated fields (Set-Cookie) and the body back, and request bodies up', async () => {
    const { port } = await setUp((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        res.writeHead(201, 'Made', [
          'Set-Cookie',
          'a=1',
          'Set-Cookie',
          'b=2',
          'X-Request-Id',
          'upstream-id',
          'Content-Type',
          'text/plain',
          'Content-Length',
          String(body.length),
        ]);
        res.end(body);
      });
    });
    const res = await send(port, { method: 'POST', path: '/b', headers: { 'content-type': 'text/plain' } }, 'hello');
    expect(res.status).toBe(201);
    expect(res.body).toBe('hello');
    const pairs: [string, string][] = [];
    for (let i = 0; i < res.raw.length; i += 2) pairs.push([res.raw[i]!.toLowerCase(), res.raw[i + 1]!]);
    expect(pairs.filter(([k]) => k === 'set-cookie').map(([, v]) => v)).toEqual(['a=1', 'b=2']);
    expect(pairs.filter(([k]) => k === 'x-request-id').map(([, v]) => v)).toEqual(['rid-1']);
  });

  it('forwards a DELETE that says Content-Length: 0 with that one length (a second one is a malformed request upstream)', async () => {
    const { port } = await setUp((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ method: req.method, length: req.headers['content-length'] }));
    });
    for (const headers of [{ 'content-length': '0' }, {}]) {
      const res = await send(port, { method: 'DELETE', path: '/api/v1/x', headers });
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body)).toEqual({ method: 'DELETE', length: '0' });
    }
  });

  it('answers 503 upstream_unavailable when the service cannot be reached', async () => {
    const agent = new http.Agent({ keepAlive: true });
    agents.push(agent);
    const dead = await listen(() => undefined);
    await new Promise((r) => servers.pop()!.close(r));
    const forwarder = new Forwarder('secrets', `http://127.0.0.1:${dead}`, createLogger('test', 'silent'), 5000, agent);
    const port = await listen((req, res) => forwarder.forward(req, res, { requestId: 'r', identity: 'i', clientAddress: '127.0.0.1' }));
    const res = await send(port, { path: '/c' });
    expect(res.status).toBe(503);
    expect(JSON.parse(res.body)).toEqual({ error: 'secrets service unavailable', code: 'upstream_unavailable' });
  });
});
