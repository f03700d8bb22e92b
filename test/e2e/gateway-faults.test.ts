// Two fault promises of the gateway, over real HTTP with real auth:
//
// - Auth down: a socket link sits between the gateway and auth's gRPC port. With the link
//   down, a request with a valid token is a 503 `upstream_unavailable` in under a second,
//   and nothing reaches a service (the upstream counts requests; a write through auth's
//   HTTP route did not happen). With the link back, requests succeed again without
//   restarting the gateway. A hung auth (accepts, never answers) is a 503 within a second
//   too: the default PIER_AUTH_TIMEOUT_MS.
// - Slow and hung upstreams: compute's route points at a local server that holds a request,
//   stalls a body after its headers, streams server-sent events slowly, or keeps a
//   WebSocket idle. PIER_UPSTREAM_TIMEOUT_MS is 500 ms here: the held request is a 504
//   `upstream_timeout`, the stalled body is cut, and the event stream and the WebSocket —
//   silent for three times the timeout — are not.
// - A gateway that stops (SIGTERM; kit's drain.ts): its readiness fails at once while it
//   still answers (closing each connection), then event streams end with a `reconnect`
//   event and WebSockets close with 1012, so clients reconnect to another gateway.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { socketLink, type SocketLink } from '@pier/testing';
import * as gateway from '@pier/gateway';
import type { RunningService } from '@pier/kit';
import { freePort, startPlatform, type Api, type Platform } from '../support/platform.ts';

const TIMEOUT_MS = 500;
/** Longer than the timeout: what a long-lived stream must survive. */
const SILENCE_MS = 3 * TIMEOUT_MS;

let p: Platform;
let owner: Api;
let ws: string;
let vpc: string;
let link: SocketLink;
let upstream: http.Server;
/** Requests to the `flaky` path so far. */
let flaky = 0;
/** Plain HTTP requests that reached the upstream, by path. */
const reached: string[] = [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Compute's stand-in: its behaviour is chosen by the last segment of the path. */
async function startFaultyUpstream(): Promise<string> {
  upstream = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    // The gateway's readiness check asks /healthz: not a proxied request.
    if (url.pathname !== '/healthz') reached.push(url.pathname);
    const last = url.pathname.slice(url.pathname.lastIndexOf('/') + 1);
    if (last === 'hang') return; // accepts the request and never answers
    if (last === 'stall') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"items":['); // headers and a first chunk, then nothing
      return;
    }
    if (last === 'slow') {
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"slow":true}'), TIMEOUT_MS / 2);
      return;
    }
    if (last === 'flaky') {
      // Every other request has its connection cut before any answer (a service stopping).
      flaky++;
      if (flaky % 2 === 1) return void req.socket.destroy();
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(`{"attempt":${flaky}}`);
    }
    if (last === 'forever') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write('event: line\ndata: {"text":"first"}\n\n'); // then open until the gateway ends it
      return;
    }
    if (last === 'logs') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(': open\n\n');
      setTimeout(() => res.write('event: line\ndata: {"text":"after the silence"}\n\n'), SILENCE_MS);
      setTimeout(() => res.end('event: line\ndata: {"text":"last"}\n\n'), SILENCE_MS + 100);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"upstream":"faulty"}');
  });
  const wss = new WebSocketServer({ server: upstream });
  wss.on('connection', (socket) => socket.on('message', (data) => socket.send(`echo:${data.toString()}`)));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  const upstreamUrl = await startFaultyUpstream();
  // Auth's gRPC port is chosen here so the link can stand in front of it.
  const authGrpcPort = await freePort();
  link = socketLink({ host: '127.0.0.1', port: authGrpcPort });
  await link.up();
  p = await startPlatform({
    env: {
      auth: { PIER_AUTH_GRPC_PORT: String(authGrpcPort) },
      databases: { PIER_AUTH_GRPC_URL: `127.0.0.1:${authGrpcPort}` },
      gateway: { PIER_AUTH_GRPC_URL: link.address, PIER_COMPUTE_URL: upstreamUrl, PIER_UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS) },
    },
  });
  owner = p.api(p.bootstrap.token);
  ws = p.bootstrap.workspaceId;
  vpc = p.bootstrap.vpcId;
}, 60_000);

afterAll(async () => {
  await p?.stop();
  await link?.down();
  upstream?.closeAllConnections();
  await new Promise((resolve) => upstream?.close(resolve));
});

const vpcPath = (rest: string) => `/api/v1/workspaces/${ws}/vpcs/${vpc}${rest}`;
const servicePath = (last: string) => vpcPath(`/services/7f1c1f7e-0d37-4a4e-9d69-1c1a7c5e9e11/${last}`);

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - start };
}

const DOWN_MS = 10_000;

describe('auth down', () => {
  it('answers 503 within a second, proxies nothing, and recovers on its own when auth returns', { timeout: 60_000 }, async () => {
    expect((await owner.get(vpcPath('/services'))).status).toBe(200);
    const reachedBefore = reached.length;

    await link.down();
    const latencies: number[] = [];
    const attempts: [string, () => Promise<{ status: number; body: unknown }>][] = [
      ['GET compute', () => owner.get(vpcPath('/services'))],
      ['POST compute', () => owner.post(vpcPath('/services'), { name: 'never-created' })],
      ['DELETE compute', () => owner.delete(vpcPath('/services/7f1c1f7e-0d37-4a4e-9d69-1c1a7c5e9e11'))],
      ['POST auth', () => owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'while-auth-down' })],
    ];
    // Down for 10 s, asking all along: long enough for grpc-js's own backoff (1 s growing
    // by 1.6 to 120 s) to have reached several seconds, which the recovery below would show.
    const downSince = performance.now();
    while (performance.now() - downSince < DOWN_MS) {
      for (const [what, send] of attempts) {
        const { value: res, ms } = await timed(send);
        expect(res.status, what).toBe(503);
        expect(res.body, what).toEqual({ error: 'auth service unavailable', code: 'upstream_unavailable' });
        expect(ms, what).toBeLessThan(1000);
        latencies.push(ms);
      }
      await sleep(500);
    }
    // Nothing the gateway could not authenticate went on.
    expect(reached.length).toBe(reachedBefore);
    // Its readiness (internal port) says why.
    const notReady = await fetch(`${p.serviceUrls.gatewayMetrics}/readyz`);
    expect(notReady.status).toBe(503);
    expect(((await notReady.json()) as { checks: { auth: { ok: boolean } } }).checks.auth.ok).toBe(false);

    await link.up();
    const start = performance.now();
    let status = 0;
    while (status !== 200 && performance.now() - start < 10_000) {
      status = (await owner.get(vpcPath('/services'))).status;
      if (status !== 200) await sleep(25);
    }
    const recoveryMs = performance.now() - start;
    expect(status).toBe(200);
    // PIER_AUTH_RECONNECT_MAX_MS (1 s by default, ±20 % jitter) bounds it.
    expect(recoveryMs).toBeLessThan(2500);
    expect(reached.length).toBe(reachedBefore + 1);
    const keys = await owner.get(`/api/v1/workspaces/${ws}/api-keys`);
    expect(keys.body.items.map((k: { name: string }) => k.name)).not.toContain('while-auth-down');
    expect((await fetch(`${p.serviceUrls.gatewayMetrics}/readyz`)).status).toBe(200);
    console.info(
      `auth down: 503 in ${Math.min(...latencies).toFixed(1)}–${Math.max(...latencies).toFixed(1)} ms over ${latencies.length} requests; ` +
        `recovered ${recoveryMs.toFixed(0)} ms after auth came back`,
    );
  });

  it('auth replaced behind its address (the old connection black-holed, never closed): answered again within 20 s', { timeout: 60_000 }, async () => {
    // A token never seen before each time: the gateway's answer cache cannot answer it, auth must (401).
    const ask = () => p.apiAt(p.gatewayUrl, { authorization: `Bearer pier_${randomUUID().replace(/-/g, '')}` }).get(vpcPath('/services'));
    expect((await ask()).status).toBe(401);
    // What a deleted pod behind a Service leaves the gateway: a connection nothing answers on.
    link.freeze();
    const start = performance.now();
    let status = 0;
    let failed = 0;
    while (status !== 401 && performance.now() - start < 40_000) {
      status = (await ask()).status;
      if (status !== 401) {
        failed++;
        await sleep(250);
      }
    }
    const ms = performance.now() - start;
    // The frozen connection goes (the link relays new ones all along).
    await link.down();
    await link.up();
    expect(status).toBe(401);
    // The keepalive (every 10 s, answered within 5 s) finds the dead connection; the channel connects anew.
    expect(ms).toBeLessThan(20_000);
    expect(failed).toBeGreaterThan(0);
    console.info(`auth replaced: answered again ${ms.toFixed(0)} ms after its connection went silent (${failed} requests answered 503 meanwhile)`);
  });

  it('a hung auth (accepts, never answers) is a 503 within a second, with the default settings', async () => {
    const held: net.Socket[] = [];
    const hung = net.createServer((s) => held.push(s));
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
    let g: RunningService | undefined;
    try {
      g = await gateway.start(
        gateway.readConfig({
          PIER_GATEWAY_PORT: '0',
          PIER_LOG_LEVEL: 'warn',
          PIER_AUTH_GRPC_URL: `127.0.0.1:${(hung.address() as AddressInfo).port}`,
          PIER_AUTH_URL: p.serviceUrls.auth,
          PIER_GATEWAY_SERVICE_PRIVATE_KEY: p.gatewayKeys.privateJwk,
        }),
      );
      const api = p.apiAt(`http://127.0.0.1:${g.httpPort}`, { authorization: `Bearer ${p.bootstrap.token}` });
      for (let i = 0; i < 3; i++) {
        const { value: res, ms } = await timed(() => api.get('/api/v1/workspaces'));
        expect(res.status).toBe(503);
        expect(res.body).toEqual({ error: 'auth service unavailable', code: 'upstream_unavailable' });
        expect(ms).toBeLessThan(1000);
        console.info(`hung auth: 503 in ${ms.toFixed(0)} ms`);
      }
    } finally {
      await g?.stop();
      for (const s of held) s.destroy();
      await new Promise((resolve) => hung.close(resolve));
    }
  });
});

/** A raw GET through the gateway: when the headers came, and whether the body ended or was cut. */
function rawGet(path: string): Promise<{ status: number; headersMs: number; closedMs: number; complete: boolean; body: string }> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const req = http.get(`${p.gatewayUrl}${path}`, { headers: { authorization: `Bearer ${p.bootstrap.token}` }, agent: false }, (res) => {
      const headersMs = performance.now() - start;
      let body = '';
      res.on('data', (d: Buffer) => (body += d));
      res.on('error', () => undefined);
      res.on('close', () => resolve({ status: res.statusCode!, headersMs, closedMs: performance.now() - start, complete: res.complete, body }));
    });
    req.on('error', reject);
  });
}

describe('slow and hung upstreams', () => {
  it('a request the upstream never answers is a 504 upstream_timeout after the timeout', async () => {
    for (const send of [() => owner.get(servicePath('hang')), () => owner.post(servicePath('hang'), { x: 1 })]) {
      const { value: res, ms } = await timed(send);
      expect(res.status).toBe(504);
      expect(res.body).toEqual({ error: `compute service did not answer within ${TIMEOUT_MS} ms`, code: 'upstream_timeout' });
      expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
      expect(ms).toBeLessThan(TIMEOUT_MS + 500);
      console.info(`hung upstream: 504 after ${ms.toFixed(0)} ms`);
    }
  });

  it('an upstream slower than usual but within the timeout is answered', async () => {
    const res = await owner.get(servicePath('slow'));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ slow: true });
  });

  it('a body that stalls after its headers ends the response: the client sees the cut, not a hang', async () => {
    const res = await rawGet(servicePath('stall'));
    expect(res.status).toBe(200);
    expect(res.body).toBe('{"items":[');
    expect(res.complete).toBe(false);
    expect(res.closedMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
    expect(res.closedMs).toBeLessThan(TIMEOUT_MS + 500);
    console.info(`stalled body: headers after ${res.headersMs.toFixed(0)} ms, connection cut after ${res.closedMs.toFixed(0)} ms`);
  });

  it('a server-sent event stream silent for longer than the timeout is not cut', async () => {
    const res = await rawGet(`${servicePath('logs')}?follow=true`);
    expect(res.status).toBe(200);
    expect(res.complete).toBe(true);
    expect(res.body).toContain('after the silence');
    expect(res.body).toContain('"last"');
    expect(res.closedMs).toBeGreaterThanOrEqual(SILENCE_MS);
  });

  it('a WebSocket session idle for longer than the timeout is not cut', async () => {
    const socket = new WebSocket(`${p.gatewayUrl.replace('http', 'ws')}${servicePath('exec')}?access_token=${p.bootstrap.token}`);
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    let closed = false;
    socket.once('close', () => (closed = true));
    await sleep(SILENCE_MS);
    expect(closed).toBe(false);
    const reply = new Promise<string>((resolve) => socket.once('message', (d) => resolve(d.toString())));
    socket.send('still there?');
    expect(await reply).toBe('echo:still there?');
    socket.close();
  });

  it('closes an upstream socket it has not used for 4 s (before a Service would drop a gone pod from its endpoints)', async () => {
    const open = new Set<net.Socket>();
    const onConnection = (socket: net.Socket) => {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
    };
    upstream.on('connection', onConnection);
    try {
      expect((await owner.get(servicePath('fine'))).status).toBe(200);
      const pooled = [...open];
      expect(pooled.length).toBeGreaterThan(0);
      const start = performance.now();
      while (pooled.some((s) => open.has(s)) && performance.now() - start < 10_000) await sleep(100);
      const ms = performance.now() - start;
      expect(pooled.filter((s) => open.has(s))).toEqual([]);
      expect(ms).toBeLessThan(6_000);
      console.info(`upstream idle socket closed ${ms.toFixed(0)} ms after its request`);
    } finally {
      upstream.off('connection', onConnection);
    }
  });

  it('sends a read (or a keyed bodiless write) once more when the connection closed before any answer; not other writes', async () => {
    flaky = 0;
    const read = await owner.get(servicePath('flaky'));
    expect([read.status, read.body]).toEqual([200, { attempt: 2 }]);
    const keyed = await p
      .apiAt(p.gatewayUrl, { authorization: `Bearer ${p.bootstrap.token}`, 'idempotency-key': randomUUID() })
      .post(servicePath('flaky'), undefined);
    expect([keyed.status, keyed.body]).toEqual([200, { attempt: 4 }]);
    // A write without a key might have run: the client hears of the failure.
    const unkeyed = await owner.post(servicePath('flaky'), undefined);
    expect([unkeyed.status, unkeyed.body]).toEqual([503, { error: 'compute service unavailable', code: 'upstream_unavailable' }]);
  });

  it('the gateway is still healthy for ordinary requests afterwards', async () => {
    expect((await owner.get(vpcPath('/services'))).status).toBe(200);
  });
});

describe('a gateway that stops', () => {
  it('fails readiness while still answering, then ends streams with reconnect and sockets with 1012', { timeout: 30_000 }, async () => {
    const g = await gateway.start(
      gateway.readConfig({
        PIER_GATEWAY_PORT: '0',
        PIER_GATEWAY_METRICS_PORT: '0',
        PIER_LOG_LEVEL: 'warn',
        PIER_AUTH_GRPC_URL: link.address,
        PIER_AUTH_URL: p.serviceUrls.auth,
        PIER_COMPUTE_URL: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
        PIER_GATEWAY_SERVICE_PRIVATE_KEY: p.gatewayKeys.privateJwk,
        PIER_SHUTDOWN_DELAY_MS: '1000',
      }),
    );
    const base = `http://127.0.0.1:${g.httpPort}`;
    const auth = { authorization: `Bearer ${p.bootstrap.token}` };
    const get = (url: string) =>
      new Promise<{ status: number; connection?: string; body: string }>((resolve, reject) => {
        http
          .get(url, { headers: auth, agent: false }, (res) => {
            let body = '';
            res.on('data', (d: Buffer) => (body += d));
            res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }));
          })
          .on('error', reject);
      });
    const stream = get(`${base}${servicePath('forever')}?follow=true`);
    const socket = new WebSocket(`${base.replace('http', 'ws')}${servicePath('exec')}?access_token=${p.bootstrap.token}`);
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    const closed = new Promise<[number, string]>((resolve) => socket.once('close', (code, reason) => resolve([code, reason.toString()])));
    await sleep(200);

    const stopped = g.stop();
    const ready = await get(`http://127.0.0.1:${g.metricsPort}/healthz`);
    expect([ready.status, JSON.parse(ready.body).status]).toEqual([503, 'draining']);
    // Still answering meanwhile, each answer closing its connection.
    const answered = await get(`${base}${servicePath('fine')}`);
    expect([answered.status, answered.connection]).toEqual([200, 'close']);

    const streamed = await stream;
    expect(streamed.body).toContain('"first"');
    expect(streamed.body).toContain('event: reconnect\ndata: {"error":"the service is restarting: reconnect","code":"service_restarting"}');
    expect(await closed).toEqual([1012, 'the service is restarting: reconnect']);
    await stopped;
  });
});
