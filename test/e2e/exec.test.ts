// A shell in a service, end to end: a WebSocket client through the gateway, authenticated
// by `access_token` as a browser would, into a real container on the docker adapter.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openShell, shellUrl, type ShellClient } from '@pier/testing';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';
import { startOidcProvider, type OidcProvider } from '../support/oidc.ts';
import { memberKey } from '../support/members.ts';
import { cleanVpcs, TINY_HTTP, waitForStatus } from './services-support.ts';

let p: Platform;
let oidc: OidcProvider;
let owner: Api;
let base: string;
let serviceId: string;
const logLines: string[] = [];
const collect = () =>
  new Writable({
    write(chunk, _enc, done) {
      logLines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
/** Keys of members with these roles in the bootstrap workspace. */
const keys: Record<'admin' | 'developer' | 'viewer', string> = {} as never;

beforeAll(async () => {
  oidc = await startOidcProvider();
  p = await startPlatform({ env: { auth: oidc.env }, gatewayLog: collect(), computeLog: collect() });
  owner = p.api(p.bootstrap.token);
  const ws = p.bootstrap.workspaceId;
  for (const role of ['admin', 'developer', 'viewer'] as const) keys[role] = await memberKey(p, oidc, `${role}@example.com`, role);
  base = `/api/v1/workspaces/${ws}/vpcs/${p.bootstrap.vpcId}/services`;
  const created = await owner.post(base, { name: 'shell-target', image: TINY_HTTP, health_check_path: '/healthz' });
  expect(created.status).toBe(201);
  serviceId = created.body.id;
  await waitForStatus(owner, `${base}/${serviceId}`, 'running');
}, 90_000);

afterAll(async () => {
  await p?.stop();
  await oidc?.stop();
  if (p) await cleanVpcs(p.bootstrap.vpcId);
}, 60_000);

function url(token: string, query: Record<string, string | string[]> = {}): string {
  return shellUrl(`${p.gatewayUrl.replace(/^http/, 'ws')}${base}/${serviceId}/exec`, { access_token: token, ...query });
}

const shell = (query: Record<string, string | string[]> = {}, token = p.bootstrap.token): Promise<ShellClient> => openShell(url(token, query));
const refused = (query: Record<string, string | string[]>, token: string) =>
  shell(query, token).then(
    (s) => {
      s.ws.close();
      throw new Error('the handshake was accepted');
    },
    (err: { status: number; body: unknown }) => ({ status: err.status, body: err.body }),
  );

describe('a shell through the gateway', () => {
  it('carries output, then the exit code', async () => {
    const hello = await shell({ command: ['echo', 'hello through the gateway'], tty: 'false' });
    expect((await hello.closed).code).toBe(1000);
    expect(hello.output()).toBe('hello through the gateway\n');
    expect(hello.messages).toEqual([{ type: 'exit', code: 0 }]);

    const three = await shell({ command: ['/bin/sh', '-c', 'exit 3'], tty: 'false' });
    await three.closed;
    expect(three.messages).toEqual([{ type: 'exit', code: 3 }]);
  });

  it('resizes the terminal', async () => {
    const s = await shell();
    s.control({ type: 'resize', cols: 91, rows: 27 });
    await new Promise((r) => setTimeout(r, 200));
    s.send('stty size; exit\n');
    await s.waitFor('27 91');
    await s.closed;
    expect(s.messages.at(-1)).toEqual({ type: 'exit', code: 0 });
  });

  it('ends a command without a terminal when stdin ends', async () => {
    const s = await shell({ command: ['wc', '-l'], tty: 'false' });
    s.send('a\nb\nc\n');
    s.control({ type: 'eof' });
    await s.closed;
    expect(s.output().trim()).toBe('3');
    expect(s.messages).toEqual([{ type: 'exit', code: 0 }]);
  });

  it('lets an Admin in; refuses a Developer and a Viewer (403), a revoked key and no key (401), all as JSON', async () => {
    const admin = await shell({ command: 'true', tty: 'false' }, keys.admin);
    await admin.closed;
    expect(admin.messages).toEqual([{ type: 'exit', code: 0 }]);
    for (const role of ['developer', 'viewer'] as const) {
      expect(await refused({}, keys[role])).toEqual({ status: 403, body: { error: 'insufficient workspace permissions', code: 'forbidden' } });
    }
    const made = await owner.post(`/api/v1/workspaces/${p.bootstrap.workspaceId}/api-keys`, { name: 'soon-revoked' });
    expect((await owner.delete(`/api/v1/workspaces/${p.bootstrap.workspaceId}/api-keys/${made.body.id}`)).status).toBe(204);
    expect(await refused({}, made.body.key)).toMatchObject({ status: 401, body: { code: 'invalid_api_key' } });
    expect(await refused({}, '')).toMatchObject({ status: 401, body: { code: 'missing_token' } });
  });

  it('refuses a service that is not running with a JSON 409 before the upgrade', async () => {
    const stopped = await owner.post(base, { name: 'never-up', service_type: 'worker', image: 'pier/exits:1' });
    await waitForStatus(owner, `${base}/${stopped.body.id}`, 'crashed');
    const r = await openShell(url(p.bootstrap.token).replace(serviceId, stopped.body.id)).catch((err: { status: number; body: unknown }) => err);
    expect(r).toMatchObject({ status: 409, body: { code: 'service_not_running' } });
  });

  it('never writes a token to a log line (gateway or compute)', async () => {
    const token = p.bootstrap.token;
    const s = await shell({ command: 'true', tty: 'false' });
    await s.closed;
    const text = logLines.join('\n');
    for (const secret of [token, token.slice(3), keys.admin, keys.viewer]) expect(text).not.toContain(secret);
    expect(text).not.toContain('access_token');
    const upgrades = logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request' && l.upgrade === true && l.path.endsWith('/exec'));
    // Both the gateway and compute logged the handshakes, by path.
    expect(upgrades.filter((l) => l.status === 101).length).toBeGreaterThanOrEqual(2);
  });
});
