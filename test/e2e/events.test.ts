// The audit log through the gateway: writes made with an API key, a CLI session and an OIDC
// sign-in appear in GET /workspaces/{ws}/events naming the user, the credential and the
// address the gateway saw (a client's own X-Forwarded-For or x-pier-client-address is not
// believed); Developers and Viewers get 403; no secret value, key or token is stored in
// any event (the events table and every outbox are scanned).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ev } from './events-support.ts';
import { until } from '@pier/testing';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';
import { startOidcProvider, type OidcProvider } from '../support/oidc.ts';
import { memberKey } from '../support/members.ts';
import { encodingsOf, findInDatabase } from '../../services/secrets/test/support.ts';

let p: Platform;
let oidc: OidcProvider;
let owner: Api;
let events: string;
const SECRET_VALUE = 'hunter2-never-in-an-event-4f9a';
const tokens: string[] = [];

beforeAll(async () => {
  oidc = await startOidcProvider();
  p = await startPlatform({ env: { auth: oidc.env } });
  owner = p.api(p.bootstrap.token);
  events = `/api/v1/workspaces/${p.bootstrap.workspaceId}/events`;
  tokens.push(p.bootstrap.token);
}, 120_000);

afterAll(async () => {
  await p?.stop();
  await oidc?.stop();
});

const eventOf = async (type: string, resourceId: string): Promise<Ev> =>
  (await until(
    async () => ((await owner.get(`${events}?type=${type}&resource_id=${resourceId}`)).body.items as Ev[])[0],
    (e) => e !== undefined,
    20_000,
    100,
  ))!;

describe('the audit log through the gateway', () => {
  it('names the user, the API key and the address the gateway saw', async () => {
    const ws = p.bootstrap.workspaceId;
    const spoof = { headers: { 'x-forwarded-for': '6.6.6.6', 'x-pier-client-address': '6.6.6.6' } };
    const secret = await owner.post(`/api/v1/workspaces/${ws}/vpcs/${p.bootstrap.vpcId}/secrets`, { name: 'db', values: { PASSWORD: SECRET_VALUE } }, spoof);
    expect(secret.status).toBe(201);
    const e = await eventOf('secret.created', secret.body.id);
    const me = (await owner.get('/api/v1/me')).body;
    expect(e.actor).toEqual({ user_id: me.id, email: p.bootstrap.email, credential: { kind: 'api_key', id: expect.any(String), name: 'bootstrap' } });
    expect(e.source_ip).toBe('127.0.0.1');
    expect(e.resource).toEqual({ kind: 'secret', id: secret.body.id, name: 'db' });
    expect(e.vpc_id).toBe(p.bootstrap.vpcId);

    // A key made and revoked: both events, the key itself in neither.
    const key = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'ci' });
    expect(key.status).toBe(201);
    tokens.push(key.body.key);
    expect((await owner.delete(`/api/v1/workspaces/${ws}/api-keys/${key.body.id}`)).status).toBe(204);
    const revoked = await eventOf('api_key.revoked', key.body.id);
    expect(revoked.actor?.credential).toMatchObject({ kind: 'api_key', name: 'bootstrap' });
    expect(revoked.resource).toMatchObject({ kind: 'api_key', id: key.body.id });
    expect(revoked.source_ip).toBe('127.0.0.1');
  });

  it('names a CLI session and an OIDC sign-in as the credential', async () => {
    const ws = p.bootstrap.workspaceId;
    const session = await owner.post('/api/v1/cli-sessions', { name: 'laptop' });
    expect(session.status).toBe(201);
    tokens.push(session.body.token);
    const vpc = await p.api(session.body.token).post(`/api/v1/workspaces/${ws}/vpcs`, { name: 'audited' });
    expect(vpc.status).toBe(201);
    const created = await eventOf('vpc.created', vpc.body.id);
    expect(created.actor?.credential).toEqual({ kind: 'cli_session', id: session.body.id, name: 'laptop' });

    await memberKey(p, oidc, 'events-admin@example.com', 'admin');
    const jwt = await oidc.sign('events-admin@example.com');
    tokens.push(jwt);
    expect((await p.api(jwt).delete(`/api/v1/workspaces/${ws}/vpcs/${vpc.body.id}`)).status).toBe(204);
    const deleted = await eventOf('vpc.deleted', vpc.body.id);
    expect(deleted.actor).toMatchObject({ email: 'events-admin@example.com', credential: { kind: 'oidc', id: null, name: null } });
  });

  it("names the actor of a service's create and delete; its status changes are the platform's own", async () => {
    const base = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/services`;
    const svc = await owner.post(base, { name: 'audited-web', image: 'pier/tiny-http:1' });
    expect(svc.status).toBe(201);
    const created = await eventOf('service.created', svc.body.id);
    expect(created.actor).toMatchObject({ email: p.bootstrap.email, credential: { kind: 'api_key', name: 'bootstrap' } });
    expect(created.resource).toEqual({ kind: 'service', id: svc.body.id, name: 'audited-web' });
    const changed = await eventOf('service.status_changed', svc.body.id);
    expect(changed.actor).toBeNull();
    expect(changed.source_ip).toBeNull();
    expect([202, 204]).toContain((await owner.delete(`${base}/${svc.body.id}`)).status);
    const deleted = await eventOf('service.deleted', svc.body.id);
    expect(deleted.actor?.credential).toMatchObject({ kind: 'api_key', name: 'bootstrap' });
  }, 60_000);

  it('is for Owners and Admins: a Developer and a Viewer get 403', async () => {
    for (const role of ['developer', 'viewer'] as const) {
      const key = await memberKey(p, oidc, `events-${role}@example.com`, role);
      const r = await p.api(key).get(events);
      expect(r.status, role).toBe(403);
      expect(r.body.code).toBe('forbidden');
    }
    const admin = await memberKey(p, oidc, 'events-admin2@example.com', 'admin');
    expect((await p.api(admin).get(events)).status).toBe(200);
    // Adding them was the owner's doing, with the bootstrap key.
    const added = await until(
      async () => ((await owner.get(`${events}?type=member.added`)).body.items as Ev[]).filter((e) => e.data.role === 'viewer'),
      (found) => found.length > 0,
      20_000,
      100,
    );
    expect(added).toHaveLength(1);
    expect(added[0]!.actor).toMatchObject({ email: p.bootstrap.email, credential: { kind: 'api_key', name: 'bootstrap' } });
    expect(added[0]!.resource.kind).toBe('member');
    const bad = await owner.get(`${events}?since=yesterday`);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'invalid_request', field: 'since' });
  });

  it('stores no secret value, key or token in any event', async () => {
    const needles = [...encodingsOf(SECRET_VALUE), ...tokens];
    const hits = await findInDatabase(p.database.adminUrl, needles);
    expect(hits.filter((t) => t === 'events.events' || t.endsWith('.outbox'))).toEqual([]);
    const all = (await owner.get(`${events}?limit=200`)).body.items as Ev[];
    expect(all.length).toBeGreaterThan(5);
    const text = JSON.stringify(all);
    for (const n of needles) expect(text).not.toContain(n);
  });
});
