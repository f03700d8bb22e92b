// The gateways' cache of auth's answers has no grace: a revoke (of a key, and with it of
// the CLI sessions minted with that key), a downgrade or a removal made through one gateway holds for the very next request through another, whose cache
// held the old answer a moment before. Two gateways, each with its own auth instance, on
// one database and one NATS; each loop runs 1,000 times. Then one gateway's link to NATS
// is cut: it stops using its cache within the lease, keeps answering correctly through
// auth, never serves a revoke made during the cut from its cache, and caches again once
// the link is back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { socketLink, type SocketLink } from '@pier/testing';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';
import { startOidcProvider, type OidcProvider } from '../support/oidc.ts';
import { startSecondFront, type SecondFront } from '../support/second-front.ts';
import { api } from '../support/api.ts';

const ROUNDS = 1000;

let p: Platform;
let oidc: OidcProvider;
let b: SecondFront;
let owner: Api;
let ws: string;

/** The gateway's pier_gateway_auth_cache_total by result, and its lease gauge. */
async function cacheFigures(metricsUrl: string): Promise<{ hit: number; miss: number; off: number; lease: number }> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  const count = (result: string) => Number(new RegExp(`^pier_gateway_auth_cache_total\\{[^}]*result="${result}"[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  const raw = /^pier_gateway_auth_cache_lease_seconds(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1];
  const lease = raw === '-Inf' ? -Infinity : Number(raw);
  return { hit: count('hit'), miss: count('miss'), off: count('off'), lease };
}

/**
 * Waits until the gateway's cache is usable (it has a lease). A gateway learns which
 * installation to follow from auth's first answer, so one request goes first.
 */
async function leased(front: SecondFront, ms = 20_000): Promise<void> {
  expect((await api(front.gatewayUrl, { authorization: `Bearer ${p.bootstrap.token}` }).get('/api/v1/me')).status).toBe(200);
  const metricsUrl = front.gatewayMetricsUrl;
  const until = Date.now() + ms;
  while (!((await cacheFigures(metricsUrl)).lease > 0)) {
    if (Date.now() > until) throw new Error(`the gateway at ${metricsUrl} got no lease within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A user signed in by JWT who made a workspace and an API key of their own. */
async function person(email: string): Promise<{ key: string; userId: string }> {
  const me = p.api(await oidc.sign(email));
  const home = await me.post('/api/v1/workspaces', { name: `home-${email.split('@')[0]}` });
  expect(home.status).toBe(201);
  const key = await me.post(`/api/v1/workspaces/${home.body.id}/api-keys`, { name: 'laptop' });
  expect(key.status).toBe(201);
  const who = await me.get('/api/v1/me');
  expect(who.status).toBe(200);
  return { key: key.body.key, userId: who.body.id ?? who.body.user_id };
}

/** Served from B's cache: the same request twice, the second a hit. */
async function warm(via: Api, path: string, status: number, metricsUrl: string): Promise<void> {
  expect((await via.get(path)).status).toBe(status);
  const before = (await cacheFigures(metricsUrl)).hit;
  expect((await via.get(path)).status).toBe(status);
  expect((await cacheFigures(metricsUrl)).hit).toBe(before + 1);
}

beforeAll(async () => {
  oidc = await startOidcProvider();
  p = await startPlatform({ env: { auth: oidc.env } });
  owner = p.api(p.bootstrap.token);
  ws = p.bootstrap.workspaceId;
  b = await startSecondFront(p);
  await leased(b);
}, 90_000);

afterAll(async () => {
  await b?.stop();
  await p?.stop();
  await oidc?.stop();
});

describe('no grace through another gateway', () => {
  it(`a key revoked through gateway A is refused by gateway B at once, ${ROUNDS} times`, async () => {
    const before = await cacheFigures(b.gatewayMetricsUrl);
    for (let i = 0; i < ROUNDS; i++) {
      const created = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: `revoked-${i}` });
      expect(created.status).toBe(201);
      const viaB = api(b.gatewayUrl, { authorization: `Bearer ${created.body.key}` });
      const path = `/api/v1/workspaces/${ws}/vpcs`;
      expect((await viaB.get(path)).status).toBe(200);
      // The second read through B is answered from B's cache: the answer is there to go stale.
      expect((await viaB.get(path)).status).toBe(200);
      expect((await owner.delete(`/api/v1/workspaces/${ws}/api-keys/${created.body.id}`)).status).toBe(204);
      const after = await viaB.get(path);
      expect(after.status).toBe(401);
      expect(after.body).toEqual({ error: 'invalid or expired API key', code: 'invalid_api_key' });
    }
    const figures = await cacheFigures(b.gatewayMetricsUrl);
    // One hit per round at least (the second read), and no round served from a stale entry.
    expect(figures.hit - before.hit).toBeGreaterThanOrEqual(ROUNDS);
  }, 600_000);

  it(`a CLI session minted with a key revoked through A is refused by B at once, ${ROUNDS} times`, async () => {
    const path = `/api/v1/workspaces/${ws}/vpcs`;
    for (let i = 0; i < ROUNDS; i++) {
      const created = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: `login-${i}` });
      expect(created.status).toBe(201);
      const minted = await api(b.gatewayUrl, { authorization: `Bearer ${created.body.key}` }).post('/api/v1/cli-sessions', {});
      expect(minted.status).toBe(201);
      const viaB = api(b.gatewayUrl, { authorization: `Bearer ${minted.body.token}` });
      // The session's answer sits in B's cache, ready to go stale.
      await warm(viaB, path, 200, b.gatewayMetricsUrl);
      expect((await owner.delete(`/api/v1/workspaces/${ws}/api-keys/${created.body.id}`)).status).toBe(204);
      const after = await viaB.get(path);
      expect(after.status).toBe(401);
      expect(after.body).toEqual({ error: 'invalid or expired CLI session token', code: 'invalid_session' });
    }
  }, 600_000);

  it(`a member downgraded to Viewer through A is refused a write by B at once, ${ROUNDS} times`, async () => {
    const someone = await person('downgraded@example.com');
    expect((await owner.post(`/api/v1/workspaces/${ws}/members`, { email: 'downgraded@example.com', role: 'admin' })).status).toBe(201);
    const viaB = api(b.gatewayUrl, { authorization: `Bearer ${someone.key}` });
    const member = `/api/v1/workspaces/${ws}/members/${someone.userId}`;
    // An Admin's write with an empty body is a 400 (the role is checked first); a Viewer's is a 403.
    const write = () => viaB.post(`/api/v1/workspaces/${ws}/members`, {});
    for (let i = 0; i < ROUNDS; i++) {
      expect((await owner.patch(member, { role: 'admin' })).status).toBe(200);
      expect((await write()).status).toBe(400);
      await warm(viaB, `/api/v1/workspaces/${ws}/members?limit=1`, 200, b.gatewayMetricsUrl);
      expect((await write()).status).toBe(400);
      expect((await owner.patch(member, { role: 'viewer' })).status).toBe(200);
      const refused = await write();
      expect(refused.status).toBe(403);
      expect(refused.body.error).toBe('insufficient workspace permissions');
    }
  }, 600_000);

  it(`a member removed through A gets 404 from B at once, ${ROUNDS} times`, async () => {
    const someone = await person('removed@example.com');
    const viaB = api(b.gatewayUrl, { authorization: `Bearer ${someone.key}` });
    const path = `/api/v1/workspaces/${ws}/vpcs`;
    for (let i = 0; i < ROUNDS; i++) {
      expect((await owner.post(`/api/v1/workspaces/${ws}/members`, { email: 'removed@example.com', role: 'viewer' })).status).toBe(201);
      await warm(viaB, path, 200, b.gatewayMetricsUrl);
      expect((await owner.delete(`/api/v1/workspaces/${ws}/members/${someone.userId}`)).status).toBe(204);
      const after = await viaB.get(path);
      expect(after.status).toBe(404);
      expect(after.body.code).toBe('workspace_not_found');
    }
  }, 600_000);

  it('records uses answered from the cache as last_used_at', async () => {
    const created = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'used-from-cache' });
    const viaB = api(b.gatewayUrl, { authorization: `Bearer ${created.body.key}` });
    await warm(viaB, `/api/v1/workspaces/${ws}/vpcs`, 200, b.gatewayMetricsUrl);
    // Let the first use's last_used_at be written, then use the key from the cache only.
    await new Promise((r) => setTimeout(r, 1200));
    const first = (await owner.get(`/api/v1/workspaces/${ws}/api-keys?limit=200`)).body.items.find(
      (k: { id: string }) => k.id === created.body.id,
    ).last_used_at;
    const hitsBefore = (await cacheFigures(b.gatewayMetricsUrl)).hit;
    expect((await viaB.get(`/api/v1/workspaces/${ws}/vpcs`)).status).toBe(200);
    expect((await cacheFigures(b.gatewayMetricsUrl)).hit).toBe(hitsBefore + 1);
    const deadline = Date.now() + 5000;
    let last = first;
    while (last === first && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      last = (await owner.get(`/api/v1/workspaces/${ws}/api-keys?limit=200`)).body.items.find((k: { id: string }) => k.id === created.body.id).last_used_at;
    }
    expect(new Date(last).getTime()).toBeGreaterThan(new Date(first).getTime());
  }, 30_000);
});

describe('a gateway cut off from NATS', () => {
  let link: SocketLink;
  let c: SecondFront;

  beforeAll(async () => {
    const nats = new URL(p.natsUrl);
    link = socketLink({ host: nats.hostname, port: Number(nats.port) });
    await link.up();
    c = await startSecondFront(p, { gatewayNatsUrl: `nats://${link.address}` });
  }, 60_000);

  afterAll(async () => {
    await c?.stop();
    await link?.down();
  });

  it('stops using its cache within the lease, answers through auth, never serves a revoke made during the cut, and caches again after', async () => {
    const created = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'cut' });
    const viaC = api(c.gatewayUrl, { authorization: `Bearer ${created.body.key}` });
    const path = `/api/v1/workspaces/${ws}/vpcs`;
    // Caching, before the cut.
    await leased(c);
    await warm(viaC, path, 200, c.gatewayMetricsUrl);

    await link.down();
    const cutAt = Date.now();
    // Revoked during the cut: C cannot acknowledge, so the revoke answers once the lease is out.
    const revoked = await owner.delete(`/api/v1/workspaces/${ws}/api-keys/${created.body.id}`);
    expect(revoked.status).toBe(204);
    const answeredAt = Date.now();
    const { lease } = await cacheFigures(c.gatewayMetricsUrl);
    // Negative: C's lease had run out before the revoke was answered (by -lease seconds).
    expect(lease).toBeLessThanOrEqual(0);
    console.log(`cut → revoke answered: ${answeredAt - cutAt} ms; C's lease had expired ${(-lease * 1000).toFixed(0)} ms before the revoke's answer`);
    const refused = await viaC.get(path);
    expect(refused.status).toBe(401);

    // Without its cache, C still answers correctly for a live key, through auth.
    const live = api(c.gatewayUrl, { authorization: `Bearer ${p.bootstrap.token}` });
    const offBefore = (await cacheFigures(c.gatewayMetricsUrl)).off;
    expect((await live.get(path)).status).toBe(200);
    expect((await live.get(path)).status).toBe(200);
    expect((await cacheFigures(c.gatewayMetricsUrl)).off).toBe(offBefore + 2);

    // Back: registration and ticks resume, and so does caching.
    await link.up();
    const cutFor = Date.now();
    await leased(c);
    console.log(`link back → C caching again: ${Date.now() - cutFor} ms`);
    await warm(live, path, 200, c.gatewayMetricsUrl);
    expect((await viaC.get(path)).status).toBe(401);
  }, 60_000);
});
