// Hostname squatting, for real: the docker edge, an authoritative DNS server (BIND) and an
// ACME server (Pebble). An unverified claim must not keep a hostname from the workspace that
// controls its DNS: pending claims of different workspaces coexist, the one whose own TXT
// value DNS holds wins at verify (the others go, with an event), a verified domain alone
// holds the name (409 `hostname_taken` for anyone else), and a claim never verified lapses.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startAcmeServer, startAuthoritativeDns, testEdge, type AcmeTestServer, type AuthoritativeDns, type Scope } from '@pier/testing';
import { readConfig } from '../src/index.ts';
import { startCompute, until, cleanDocker, TINY_HTTP, type Compute } from './support.ts';

const APPS = 'apps.example.test';
const HOST = 'shop.example.test';
const DAY_MS = 86_400_000;
const edge = testEdge(APPS);

let c: Compute;
let dns: AuthoritativeDns;
let acme: AcmeTestServer;
let dir: string;
let edgeIp: string;

/** One workspace (and VPC) of its own, with a running web service. */
interface Tenant {
  scope: Scope;
  service: { id: string; url: string };
  call(method: string, suffix: string, body?: unknown): Promise<{ status: number; body: any }>;
}

const tenants: Tenant[] = [];

async function tenant(name: string, scope: Scope = { workspaceId: randomUUID(), vpcId: randomUUID() }): Promise<Tenant> {
  const base = `/api/v1/workspaces/${scope.workspaceId}/vpcs/${scope.vpcId}/services`;
  const call = (method: string, suffix: string, body?: unknown) => c.request(method, `${base}${suffix}`, body, { scope });
  const created = await call('POST', '', { name, image: TINY_HTTP });
  expect(created.status).toBe(201);
  await until(
    () => call('GET', `/${created.body.id}`).then((r) => r.body.status),
    (s) => s === 'running',
    60_000,
  );
  const t = { scope, service: created.body, call };
  tenants.push(t);
  // What a public DNS would say: the service's host is the edge.
  await dns.set(new URL(t.service.url).hostname, 'A', [edgeIp]);
  return t;
}

const attach = (t: Tenant, hostname: string) => t.call('POST', `/${t.service.id}/domains`, { hostname });
const verify = (t: Tenant, id: string) => t.call('POST', `/${t.service.id}/domains/${id}/verify`);
const listed = async (t: Tenant) => (await t.call('GET', `/${t.service.id}/domains`)).body.items as any[];

async function rows(sql: string, params: unknown[] = []): Promise<any[]> {
  const client = new pg.Client({ connectionString: c.db.adminUrl });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

const domainEvents = (domainId: string) =>
  rows(
    `select kind, payload->>'workspace_id' as workspace_id, payload->'data' as data from compute.outbox
      where kind like 'service.domain.%' and payload->'data'->>'domain_id' = $1 order by id`,
    [domainId],
  );

let squatter: Tenant;
let owner: Tenant;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'pier-domain-claims-'));
  dns = await startAuthoritativeDns(['example.test']);
  acme = await startAcmeServer(dns.address);
  await writeFile(path.join(dir, 'acme-ca.pem'), acme.listenerCaPem);
  c = await startCompute({
    ...edge.env,
    PIER_DNS_RESOLVERS: dns.address,
    PIER_ACME_DIRECTORY_URL: acme.directoryUrl,
    PIER_ACME_CA_FILE: path.join(dir, 'acme-ca.pem'),
  });
  // The edge container runs once compute has synced a first route: the first service makes it.
  const first = await c.post(c.base, { name: 'warmup', image: TINY_HTTP });
  expect(first.status).toBe(201);
  edgeIp = await until(
    () => edge.ip().catch(() => ''),
    (ip) => Boolean(ip),
    60_000,
  );
  squatter = await tenant('squat', { workspaceId: c.workspaceId, vpcId: c.vpcId });
  owner = await tenant('shop');
}, 180_000);

afterAll(async () => {
  await c?.stop();
  await edge.remove();
  for (const t of tenants) await cleanDocker(t.scope.vpcId);
  if (c) await cleanDocker(c.vpcId);
  await acme?.stop();
  await dns?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

describe('hostname claims', () => {
  let squat: any;
  let claim: any;

  it('lets another workspace claim a hostname someone attached but never verified', async () => {
    const first = await attach(squatter, HOST);
    expect(first.status).toBe(201);
    squat = first.body;
    expect(squat.status).toBe('pending');
    const second = await attach(owner, HOST);
    expect(second.status, JSON.stringify(second.body)).toBe(201);
    claim = second.body;
    expect(claim).toMatchObject({ hostname: HOST, status: 'pending', verified_at: null });
    // Each claim has a TXT value of its own: the squatter cannot verify with the owner's record.
    expect(claim.verification.value).toMatch(/^pier-verify=[0-9a-f]{32}$/);
    expect(claim.verification.value).not.toBe(squat.verification.value);
    // A pending claim lapses after PIER_DOMAIN_CLAIM_TTL_HOURS (7 days by default).
    const ttl = new Date(claim.claim_expires_at).getTime() - new Date(claim.created_at).getTime();
    expect(Math.abs(ttl - 7 * DAY_MS)).toBeLessThan(5_000);
    // The same hostname twice on one service stays a conflict.
    const twice = await attach(owner, HOST.toUpperCase());
    expect(twice.status).toBe(409);
    expect(twice.body.code).toBe('hostname_taken');
  });

  it('lets only the claim whose TXT value DNS holds verify; that one wins and the other claims go', async () => {
    await dns.set(`_pier-challenge.${HOST}`, 'TXT', [claim.verification.value]);
    await dns.set(HOST, 'CNAME', [new URL(owner.service.url).hostname]);
    const lost = await verify(squatter, squat.id);
    expect(lost.status).toBe(200);
    expect(lost.body.status).toBe('failed');
    expect(lost.body.error).toContain(`expected "${squat.verification.value}", found "${claim.verification.value}"`);
    expect(lost.body.verified_at).toBeNull();

    const won = await verify(owner, claim.id);
    expect(won.status).toBe(200);
    expect(won.body).toMatchObject({ status: 'active', error: null, claim_expires_at: null, tls: { status: 'issued' } });
    expect(won.body.verified_at).not.toBeNull();
    expect(
      (
        await until(
          () => edge.get(HOST),
          (r) => r.status === 200,
        )
      ).body,
    ).toContain('hello from pier/tiny-http');

    // The squatter's claim is gone, and its workspace was told why.
    expect(await listed(squatter)).toEqual([]);
    const again = await verify(squatter, squat.id);
    expect(again.status).toBe(404);
    expect(again.body.code).toBe('domain_not_found');
    const told = await domainEvents(squat.id);
    expect(told.map((e) => e.kind)).toEqual(['service.domain.added', 'service.domain.failed', 'service.domain.lost']);
    expect(told.at(-1)).toMatchObject({ workspace_id: squatter.scope.workspaceId, data: { hostname: HOST, status: 'failed' } });
  });

  it('keeps a verified hostname to its holder: anyone else attaching it is a 409 hostname_taken', async () => {
    const squatAgain = await attach(squatter, HOST);
    expect(squatAgain.status).toBe(409);
    expect(squatAgain.body).toMatchObject({ code: 'hostname_taken' });
    const stranger = await tenant('stranger');
    const taken = await attach(stranger, HOST);
    expect(taken.status).toBe(409);
    expect(taken.body).toMatchObject({ code: 'hostname_taken' });
    expect((await listed(owner)).map((d) => [d.hostname, d.status])).toEqual([[HOST, 'active']]);
  });

  it('lets exactly one of two verifications racing for the same hostname win', async () => {
    const race = 'race.example.test';
    const [a, b] = [tenants[0]!, tenants[2]!];
    const ca = (await attach(a, race)).body;
    const cb = (await attach(b, race)).body;
    // DNS holds both values (its owner added both), and A records to the edge suit either service.
    await dns.set(`_pier-challenge.${race}`, 'TXT', [ca.verification.value, cb.verification.value]);
    await dns.set(race, 'A', [edgeIp]);
    const answers = await Promise.all([verify(a, ca.id), verify(b, cb.id)]);
    const winners = answers.filter((r) => r.status === 200 && r.body.verified_at !== null);
    expect(winners).toHaveLength(1);
    const loser = answers.find((r) => r !== winners[0])!;
    // Usually a 409 naming the conflict; a verify that started after the winner had removed
    // its claim finds nothing left (404).
    expect([`409 hostname_taken`, `404 domain_not_found`]).toContain(`${loser.status} ${loser.body.code}`);
    const remaining = [...(await listed(a)), ...(await listed(b))].filter((d) => d.hostname === race);
    expect(remaining).toHaveLength(1);
    // The database holds the line too: a second verified row for the name is refused.
    const other = winners[0]!.body.id === ca.id ? { t: b, id: cb.id } : { t: a, id: ca.id };
    await expect(
      rows(`insert into compute.domains (workspace_id, vpc_id, service_id, hostname, verification_token, verified_at) values ($1, $2, $3, $4, 'x', now())`, [
        other.t.scope.workspaceId,
        other.t.scope.vpcId,
        other.t.service.id,
        race,
      ]),
    ).rejects.toThrow(/domains_verified_hostname/);
  });
});

describe('claim expiry', () => {
  it('treats a lapsed claim as gone at once, and the expiry pass removes it with an event', async () => {
    // 0.0005 hours: 1.8 seconds.
    await c.restart({ PIER_DOMAIN_CLAIM_TTL_HOURS: '0.0005' });
    const lapse = () => new Promise((r) => setTimeout(r, 2_200));
    const first = (await attach(squatter, 'late.example.test')).body;
    const ttl = new Date(first.claim_expires_at).getTime() - new Date(first.created_at).getTime();
    expect(Math.abs(ttl - 1800)).toBeLessThan(200);
    expect((await listed(squatter)).map((d) => d.id)).toContain(first.id);
    await lapse();
    // Gone to every reader before any pass ran: not listed, not verifiable, still in the table.
    expect((await listed(squatter)).map((d) => d.id)).not.toContain(first.id);
    expect((await verify(squatter, first.id)).status).toBe(404);
    expect(await rows(`select id from compute.domains where id = $1`, [first.id])).toHaveLength(1);
    // Nor in the way of the same service claiming the name again: the lapsed record makes way.
    const second = await attach(squatter, 'late.example.test');
    expect(second.status).toBe(201);
    expect(await rows(`select id from compute.domains where id = $1`, [first.id])).toEqual([]);
    expect((await domainEvents(first.id)).map((e) => e.kind)).toEqual(['service.domain.added', 'service.domain.expired']);
    // The pass removes a lapsed claim, and says so in the claimant's workspace.
    await lapse();
    expect(await c.running.expireDomainClaims(new Date())).toBe(1);
    expect(await rows(`select id from compute.domains where id = $1`, [second.body.id])).toEqual([]);
    const told = await domainEvents(second.body.id);
    expect(told.map((e) => e.kind)).toEqual(['service.domain.added', 'service.domain.expired']);
    expect(told[1]).toMatchObject({ workspace_id: squatter.scope.workspaceId, data: { hostname: 'late.example.test', status: 'pending' } });
    // A verified domain never lapses.
    expect((await listed(owner)).map((d) => [d.hostname, d.status])).toEqual([[HOST, 'active']]);
    await c.restart({ PIER_DOMAIN_CLAIM_TTL_HOURS: undefined });
  });

  it('refuses a claim lifetime that is not a positive number of hours, naming the variable', () => {
    expect(() => readConfig({ ...c.env, PIER_DOMAIN_CLAIM_TTL_HOURS: '0' })).toThrow(/PIER_DOMAIN_CLAIM_TTL_HOURS/);
    expect(readConfig({ ...c.env, PIER_DOMAIN_CLAIM_TTL_HOURS: undefined }).PIER_DOMAIN_CLAIM_TTL_HOURS).toBe(168);
  });
});
