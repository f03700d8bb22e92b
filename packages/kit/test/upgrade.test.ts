// WebSocket routes: judged on the handshake like JSON routes (identity, role, path and query),
// refused with JSON before any upgrade, logged by path only, closed when the service stops.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { z } from 'zod';
import WebSocket from 'ws';
import {
  RECONNECT_CLOSE_CODE,
  RECONNECT_CLOSE_REASON,
  ConflictError,
  createLogger,
  createServiceApp,
  defineUpgrade,
  generateIdentityKeys,
  IDENTITY_HEADER,
  IdentityVerifier,
  importIdentityKey,
  openApiPaths,
  queryFlag,
  queryList,
  signIdentity,
  upgradeHandler,
  type Identity,
  type UpgradeHandler,
} from '../src/index.ts';

const WS = '11111111-1111-4111-8111-111111111111';
const VPC = '22222222-2222-4222-8222-222222222222';
const PATH = `/api/v1/workspaces/${WS}/vpcs/${VPC}/things/t1/shell`;

const connected: { params: unknown; query: unknown; session: unknown; identity: Identity }[] = [];
const upgrades = [
  defineUpgrade({
    path: '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/things/{thingID}/shell',
    summary: 'a shell',
    tag: 'things',
    access: 'Admin',
    params: z.object({ workspaceID: z.string(), vpcID: z.string(), thingID: z.string() }),
    query: z.object({ command: queryList(z.string().min(1), { max: 3, description: 'argv' }), tty: queryFlag(true, 'a terminal') }),
    responses: { 101: { description: 'upgraded' }, 409: { description: 'busy' } },
    accept: async ({ params }) => {
      if (params.thingID === 'busy') throw new ConflictError('the thing is busy', 'thing_busy');
      return { opened: params.thingID };
    },
    connected: (socket, session, { params, query, identity }) => {
      connected.push({ params, query, session, identity });
      socket.send('hello');
    },
  }),
];

const logged: string[] = [];
let server: http.Server;
let handler: UpgradeHandler;
let base: string;
let token: (identity: Partial<Identity>) => Promise<string>;

beforeAll(async () => {
  const keys = await generateIdentityKeys();
  const signer = await importIdentityKey(keys.privateJwk);
  token = (identity) => signIdentity(signer, { kind: 'user', subject: 'u1', workspaceId: WS, vpcId: VPC, role: 'admin', ...identity } as Identity, 60);
  const logger = createLogger(
    'test',
    'info',
    new Writable({
      write(chunk, _enc, done) {
        logged.push(chunk.toString());
        done();
      },
    }),
  );
  const verifier = await IdentityVerifier.fromJwk(keys.publicJwk);
  const app = createServiceApp({ service: 'test', logger, verifier, routes: [], upgrades });
  server = http.createServer(app);
  handler = upgradeHandler({ routes: upgrades, verifier, logger });
  server.on('upgrade', handler.listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  handler.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** Opens a socket; resolves with it, or with the refusal's status and JSON body. */
function open(path: string, headers: Record<string, string>): Promise<{ socket?: WebSocket; status?: number; body?: any; first?: string }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${base}${path}`, { headers });
    socket.once('message', (d) => resolve({ socket, first: d.toString() }));
    socket.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(text) }));
    });
    socket.once('error', reject);
  });
}

describe('upgrade routes', () => {
  it('upgrades an allowed caller, with its path and query parsed (a repeated key is a list)', async () => {
    const r = await open(`${PATH}?command=sh&command=-c&command=id&tty=false`, { [IDENTITY_HEADER]: await token({}) });
    expect(r.first).toBe('hello');
    expect(connected.at(-1)).toMatchObject({
      params: { workspaceID: WS, vpcID: VPC, thingID: 't1' },
      query: { command: ['sh', '-c', 'id'], tty: false },
      session: { opened: 't1' },
      identity: { subject: 'u1', role: 'admin' },
    });
    const closed = new Promise((resolve) => r.socket!.once('close', resolve));
    r.socket!.close();
    await closed;
    const one = await open(`${PATH}?command=bash`, { [IDENTITY_HEADER]: await token({}) });
    expect(connected.at(-1)!.query).toEqual({ command: ['bash'], tty: true });
    one.socket!.close();
  });

  it('refuses before the handshake, as JSON: no identity, a role below, another VPC, a bad query, what accept throws, an unknown path', async () => {
    const admin = { [IDENTITY_HEADER]: await token({}) };
    expect(await open(PATH, {})).toMatchObject({ status: 401 });
    expect(await open(PATH, { [IDENTITY_HEADER]: await token({ role: 'developer' }) })).toMatchObject({
      status: 403,
      body: { error: 'insufficient workspace permissions', code: 'forbidden' },
    });
    expect(await open(PATH, { [IDENTITY_HEADER]: await token({ vpcId: '33333333-3333-4333-8333-333333333333' }) })).toMatchObject({ status: 403 });
    expect(await open(`${PATH}?tty=perhaps`, admin)).toMatchObject({ status: 400, body: { field: 'tty' } });
    expect(await open(`${PATH}?command=a&command=b&command=c&command=d`, admin)).toMatchObject({ status: 400, body: { field: 'command' } });
    expect(await open(`${PATH}?command=a%00b`, admin)).toMatchObject({ status: 400 });
    expect(await open(PATH.replace('t1', 'busy'), admin)).toMatchObject({ status: 409, body: { error: 'the thing is busy', code: 'thing_busy' } });
    expect(await open('/api/v1/elsewhere', admin)).toMatchObject({ status: 404, body: { code: 'route_not_found' } });
  });

  it('logs each handshake by path, never its query', async () => {
    await open(`${PATH}?command=secret-argument`, { [IDENTITY_HEADER]: await token({}) }).then((r) => r.socket?.close());
    const lines = logged.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request' && l.upgrade);
    expect(lines.some((l) => l.path === PATH && l.status === 101)).toBe(true);
    expect(lines.some((l) => l.path === PATH && l.status === 403)).toBe(true);
    expect(logged.join('')).not.toContain('secret-argument');
  });

  it('answers a plain GET with 426 (to a caller the handshake would admit), and documents the route as a WebSocket', async () => {
    const get = async (headers: Record<string, string>) => {
      const res = await fetch(`${base.replace('ws', 'http')}${PATH}`, { headers });
      return { status: res.status, body: await res.json() };
    };
    expect(await get({ [IDENTITY_HEADER]: await token({}) })).toMatchObject({ status: 426, body: { code: 'upgrade_required' } });
    // The caller is checked first, as on the handshake.
    expect((await get({})).status).toBe(401);
    expect((await get({ [IDENTITY_HEADER]: await token({ role: 'developer' }) })).status).toBe(403);
    const op = openApiPaths([], upgrades)['/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/things/{thingID}/shell']!.get as Record<string, any>;
    expect(op).toMatchObject({ 'x-pier-websocket': true, 'x-pier-role': 'Admin', tags: ['things'] });
    expect(op.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toEqual([
      'path:workspaceID',
      'path:vpcID',
      'path:thingID',
      'query:command',
      'query:tty',
    ]);
  });

  it('closes open sockets when the service stops, telling the client to reconnect (1012)', async () => {
    const r = await open(PATH, { [IDENTITY_HEADER]: await token({}) });
    const closed = new Promise<[number, string]>((resolve) => r.socket!.once('close', (code, reason) => resolve([code, reason.toString()])));
    handler.close();
    expect(await closed).toEqual([RECONNECT_CLOSE_CODE, RECONNECT_CLOSE_REASON]);
  });
});
