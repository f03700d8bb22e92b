// What the gateway itself promises, over real HTTP: request ids, JSON errors, the bearer
// token never travelling past it nor reaching its logs, WebSocket upgrades authenticated
// by `access_token`, and 503 when a service is down. To see exactly what passes, compute's
// route points at a tiny WebSocket echo server that records what reached it (the real
// shell is test/e2e/exec.test.ts); databases' route points at a port where nothing listens.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdentityVerifier } from '@pier/kit';
import { freePort, startPlatform, type Api, type Platform } from '../support/platform.ts';

let p: Platform;
let owner: Api;
let ws: string;
let vpc: string;
const logLines: string[] = [];
const upstreamSeen: { url: string; headers: http.IncomingHttpHeaders }[] = [];
let echo: http.Server;

async function startEchoUpstream(): Promise<string> {
  echo = http.createServer((req, res) => {
    // Plain HTTP requests that reach it: record and answer, so proxying is observable.
    upstreamSeen.push({ url: req.url ?? '', headers: req.headers });
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ upstream: 'echo' }));
  });
  const wss = new WebSocketServer({ server: echo });
  wss.on('connection', (socket, req) => {
    upstreamSeen.push({ url: req.url ?? '', headers: req.headers });
    socket.on('message', (data) => socket.send(`echo:${data.toString()}`));
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  const echoUrl = await startEchoUpstream();
  const nothing = `http://127.0.0.1:${await freePort()}`;
  const gatewayLog = new Writable({
    write(chunk, _enc, done) {
      logLines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  p = await startPlatform({ gatewayLog, env: { gateway: { PIER_COMPUTE_URL: echoUrl, PIER_DATABASES_URL: nothing } } });
  owner = p.api(p.bootstrap.token);
  ws = p.bootstrap.workspaceId;
  vpc = p.bootstrap.vpcId;
}, 60_000);

afterAll(async () => {
  await p?.stop();
  await new Promise((resolve) => echo?.close(resolve));
});

const vpcPath = (rest: string) => `/api/v1/workspaces/${ws}/vpcs/${vpc}${rest}`;

const wsUrl = (query: string) => `${p.gatewayUrl.replace('http', 'ws')}${vpcPath('/services/7f1c1f7e-0d37-4a4e-9d69-1c1a7c5e9e11/exec')}${query}`;

function open(url: string, headers: Record<string, string> = {}): Promise<{ socket?: WebSocket; status?: number; body?: unknown; requestId?: string }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    let requestId: string | undefined;
    socket.once('upgrade', (res) => (requestId = res.headers['x-request-id'] as string | undefined));
    socket.once('open', () => resolve({ socket, requestId }));
    socket.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(text), requestId: res.headers['x-request-id'] as string | undefined }));
    });
    socket.once('error', reject);
  });
}

describe('request ids', () => {
  it('every response carries x-request-id: proxied, refused, unknown, public', async () => {
    const responses = [
      await owner.get('/api/v1/workspaces'),
      await p.api().get('/api/v1/workspaces'),
      await p.api('sk-nope').get('/api/v1/workspaces'),
      await owner.get('/nowhere'),
      await owner.get('/api/v1/nowhere'),
      await p.api().get('/api/v1/openapi.json'),
      await owner.get(vpcPath('/databases')),
    ];
    for (const res of responses) expect(res.headers.get('x-request-id')).toMatch(/^[\w.-]{1,128}$/);
    const ids = new Set(responses.map((r) => r.headers.get('x-request-id')));
    expect(ids.size).toBe(responses.length);
  });

  it('a well-formed incoming id is kept end to end; a malformed one is replaced', async () => {
    const kept = await owner.get(vpcPath('/services'), { headers: { 'x-request-id': 'trace-42.a_b' } });
    expect(kept.headers.get('x-request-id')).toBe('trace-42.a_b');
    expect(upstreamSeen.at(-1)!.headers['x-request-id']).toBe('trace-42.a_b');
    const replaced = await owner.get('/api/v1/workspaces', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(replaced.headers.get('x-request-id')).not.toBe('bad id with spaces');
  });
});

describe('errors are JSON', () => {
  it('an unknown path outside /api/v1 is a JSON 404, token or not', async () => {
    for (const api of [owner, p.api()]) {
      const res = await api.get('/no/such/thing?x=1');
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      expect(res.body).toEqual({ error: 'no route for GET /no/such/thing', code: 'route_not_found' });
    }
  });

  it('an unknown path under /api/v1 is a JSON 404 once authenticated', async () => {
    const res = await owner.get('/api/v1/no-such-collection');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String), code: 'route_not_found' });
  });

  it('missing or malformed Authorization is a JSON 401', async () => {
    const headers = [undefined, 'Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', `Token ${p.bootstrap.token}`, `Bearer ${p.bootstrap.token} extra`];
    for (const authorization of headers) {
      const res = await p.api().get('/api/v1/workspaces', { headers: authorization === undefined ? {} : { authorization } });
      expect(res.status, String(authorization)).toBe(401);
      expect(res.body).toEqual({ error: expect.stringContaining('Authorization'), code: 'missing_token' });
    }
  });

  it('malformed JSON is a 400 naming the problem, and nothing is created', async () => {
    const res = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, undefined, { rawBody: '{"name": "half' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'malformed JSON body', code: 'malformed_json' });
    const wrongType = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'ok', expires_in_days: 'soon' });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body).toMatchObject({ code: 'invalid_request', field: 'expires_in_days' });
    const keys = await owner.get(`/api/v1/workspaces/${ws}/api-keys`);
    expect(keys.body.items.map((k: { name: string }) => k.name)).toEqual(['bootstrap']);
  });

  it('a routed service that is down is a JSON 503, after authentication', async () => {
    const res = await owner.get(vpcPath('/databases'));
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: 'databases service unavailable', code: 'upstream_unavailable' });
    expect((await p.api('sk-nope').get(vpcPath('/databases'))).status).toBe(401);
  });
});

describe('what travels upstream', () => {
  it('the identity token replaces the bearer token; the identity is scoped to the path', async () => {
    const res = await owner.get(vpcPath('/services?limit=5'));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ upstream: 'echo' });
    const seen = upstreamSeen.at(-1)!;
    expect(seen.url).toBe(`/api/v1/workspaces/${ws}/vpcs/${vpc}/services?limit=5`);
    expect(seen.headers.authorization).toBeUndefined();
    const identity = await (await IdentityVerifier.fromJwk(p.keys.publicJwk)).verify(seen.headers['x-pier-identity'] as string);
    expect(identity).toMatchObject({ kind: 'user', workspaceId: ws, vpcId: vpc, role: 'owner' });
  });

  it('a forged x-pier-identity from the client never reaches a service', async () => {
    await owner.get(vpcPath('/services'), { headers: { 'x-pier-identity': 'forged' } });
    expect(upstreamSeen.at(-1)!.headers['x-pier-identity']).not.toBe('forged');
    const refused = await p.api().get(vpcPath('/services'), { headers: { 'x-pier-identity': 'forged' } });
    expect(refused.status).toBe(401);
  });
});

describe('WebSocket upgrades', () => {
  it('passes through when authenticated by access_token, which does not travel on', async () => {
    const { socket, requestId } = await open(wsUrl(`?tty=1&access_token=${p.bootstrap.token}&cols=80`));
    expect(socket).toBeDefined();
    expect(requestId).toMatch(/^[\w.-]{1,128}$/);
    const reply = new Promise<string>((resolve) => socket!.once('message', (d) => resolve(d.toString())));
    socket!.send('ls');
    expect(await reply).toBe('echo:ls');
    socket!.close();

    const seen = upstreamSeen.at(-1)!;
    expect(seen.url).toBe(`/api/v1/workspaces/${ws}/vpcs/${vpc}/services/7f1c1f7e-0d37-4a4e-9d69-1c1a7c5e9e11/exec?tty=1&cols=80`);
    expect(seen.url).not.toContain(p.bootstrap.token);
    expect(seen.headers.authorization).toBeUndefined();
    const identity = await (await IdentityVerifier.fromJwk(p.keys.publicJwk)).verify(seen.headers['x-pier-identity'] as string);
    expect(identity).toMatchObject({ workspaceId: ws, vpcId: vpc, role: 'owner' });
  });

  it('also accepts the Authorization header on the handshake', async () => {
    const { socket } = await open(wsUrl(''), { authorization: `Bearer ${p.bootstrap.token}` });
    expect(socket).toBeDefined();
    socket!.close();
  });

  it('refuses a handshake without a valid token, with a JSON body', async () => {
    expect(await open(wsUrl(''))).toMatchObject({ status: 401, body: { code: 'missing_token' } });
    expect(await open(wsUrl(`?access_token=sk-${'0'.repeat(64)}`))).toMatchObject({
      status: 401,
      body: { error: 'invalid or expired API key', code: 'invalid_api_key' },
    });
    // Refusals carry the request id too, whoever refused: the gateway or the service.
    expect((await open(wsUrl(''))).requestId).toMatch(/^[\w.-]{1,128}$/);
    const notAnUpgradeRoute = await open(`${p.gatewayUrl.replace('http', 'ws')}/api/v1/no-such-socket?access_token=${p.bootstrap.token}`);
    expect(notAnUpgradeRoute).toMatchObject({ status: 404, body: { code: 'route_not_found' }, requestId: expect.any(String) });
    const otherWorkspace = `${p.gatewayUrl.replace('http', 'ws')}/api/v1/workspaces/00000000-0000-4000-8000-000000000000/vpcs/${vpc}/services/x/exec?access_token=${p.bootstrap.token}`;
    expect(await open(otherWorkspace)).toMatchObject({ status: 404 });
  });
});

describe('access logs', () => {
  it('log every request by path, never a token — not even the access_token parameter', async () => {
    const token = p.bootstrap.token;
    const session = (await owner.post('/api/v1/cli-sessions', {})).body.token as string;
    await p.api(session).get('/api/v1/workspaces?access_token=' + session);
    await owner.get(`/api/v1/workspaces?access_token=${token}&x=1`);
    await p.api().get(`/api/v1/workspaces?access_token=${token}`);
    expect((await p.api().get('/healthz')).status).toBe(200);
    const { socket } = await open(wsUrl(`?access_token=${token}`));
    socket!.close();
    await new Promise((r) => setTimeout(r, 50));

    const text = logLines.join('\n');
    for (const secret of [token, token.slice(3), session]) expect(text).not.toContain(secret);
    expect(text).not.toContain('access_token');
    const requests = logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
    expect(requests.some((l) => l.path === '/api/v1/workspaces' && l.status === 200 && typeof l.requestId === 'string')).toBe(true);
    expect(requests.some((l) => l.path === '/api/v1/workspaces' && l.status === 401)).toBe(true);
    expect(requests.some((l) => l.upgrade === true && l.path.endsWith('/exec') && l.status === 101)).toBe(true);
    expect(requests.some((l) => l.upgrade === true && l.path === '/api/v1/no-such-socket' && l.status === 404)).toBe(true);
    // Health checks come every few seconds from probes: not at info.
    expect(requests.some((l) => l.path === '/healthz')).toBe(false);
  });
});
