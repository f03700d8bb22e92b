// NATS with a user per service (deploy/platform/nats-config.ts, as `./pier up` and the chart
// run it), on a real nats-server (Debian's 2.9, as `./pier up` runs it). The whole platform
// runs on it with its own users and never trips a permission; and no user can do what the
// finding was about: read another tenant's events, forge an epoch tick or an
// acknowledgement, read another client's replies, or get in without a password.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import pg from 'pg';
import { epochAckSubject, epochSubject } from '@pier/kit';
import { freePort } from '@pier/testing';
import { NATS_USERS, natsServerConfig, type NatsUser } from '../../deploy/platform/nats-config.ts';
import { which } from '../../deploy/local/which.ts';
import { startPlatformAt, type Platform } from '../support/platform-core.ts';
import { natsWire, type NatsWire } from '../support/nats-wire.ts';

let dir: string;
let server: ChildProcess;
let serverLog = '';
let url: string;
let p: Platform;
let installation: string;
const passwords = Object.fromEntries(NATS_USERS.map((u) => [u, randomBytes(12).toString('hex')])) as Record<NatsUser, string>;
const observer = { user: 'observer', password: randomBytes(12).toString('hex') };
const opened: NatsWire[] = [];

const as = async (user: NatsUser | 'observer', password?: string) => {
  const c = await natsWire(url, { user, password: password ?? (user === 'observer' ? observer.password : passwords[user]) });
  opened.push(c);
  return c;
};
const settle = () => new Promise((r) => setTimeout(r, 150));
const violations = () => serverLog.split('\n').filter((l) => /Violation/i.test(l));

beforeAll(async () => {
  // ./pier test installs Debian's nats-server (the one `./pier up` runs).
  const binary = which('nats-server');
  if (!binary) throw new Error('nats-server is not on PATH: ./pier test installs it on Debian (apt-get install nats-server)');
  dir = await mkdtemp(path.join(tmpdir(), 'pier-nats-'));
  const port = await freePort();
  url = `nats://127.0.0.1:${port}`;
  // The observer (this test) may do anything: it reads what the services published.
  const config = path.join(dir, 'nats-server.conf');
  await writeFile(config, natsServerConfig({ listen: `127.0.0.1:${port}`, storeDir: path.join(dir, 'js'), passwords, extraUsers: [observer] }), {
    mode: 0o600,
  });
  server = spawn(binary, ['-c', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  server.stderr!.on('data', (d: Buffer) => (serverLog += d.toString()));
  const until = Date.now() + 10_000;
  while (!serverLog.includes('Server is ready')) {
    if (Date.now() > until || server.exitCode !== null) throw new Error(`nats-server did not start:\n${serverLog}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const creds = (u: NatsUser) => ({ PIER_NATS_USER: u, PIER_NATS_PASSWORD: passwords[u] });
  p = await startPlatformAt({
    postgresAdminUrl: inject('postgresAdminUrl') ?? process.env.PIER_TEST_POSTGRES_URL!,
    natsUrl: url,
    env: {
      auth: creds('auth'),
      compute: creds('compute'),
      databases: creds('databases'),
      secrets: creds('secrets'),
      gateway: creds('gateway'),
      events: creds('events'),
    },
  });
  const db = new pg.Client({ connectionString: p.database.adminUrl });
  await db.connect();
  installation = (await db.query<{ installation: string }>('select installation from auth.auth_epoch where id = 1')).rows[0]!.installation;
  await db.end();
}, 120_000);

afterAll(async () => {
  for (const c of opened) c.close();
  await p?.stop();
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function gatewayLease(): Promise<number> {
  const text = await (await fetch(`${p.serviceUrls.gatewayMetrics}/metrics`)).text();
  return Number(/^pier_gateway_auth_cache_lease_seconds(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1] ?? NaN);
}

describe('the platform on NATS with a user per service', () => {
  it('works with its users and trips no permission: events, epoch ticks, the holders bucket, acknowledgements, key owners', async () => {
    const owner = p.api(p.bootstrap.token);
    const { workspaceId: ws, vpcId: vpc } = p.bootstrap;
    // Every service's relay connects and finds (or makes) the events stream: /readyz says so.
    for (const base of [p.serviceUrls.auth, p.serviceUrls.compute!, p.serviceUrls.databases!, p.serviceUrls.secrets!, p.serviceUrls.events!]) {
      const ready = await (await fetch(`${base}/readyz`)).json();
      expect(ready.checks.nats).toEqual({ ok: true });
    }
    // The gateway follows auth's ticks and is registered in the holders bucket: it has a lease.
    expect((await owner.get('/api/v1/me')).status).toBe(200);
    const until = Date.now() + 20_000;
    while (!((await gatewayLease()) > 0)) {
      if (Date.now() > until) throw new Error(`no lease within 20 s; server log:\n${violations().join('\n')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // Revocations wait for the gateway's acknowledgement; events go out from auth and secrets.
    const revokeMs: number[] = [];
    for (let i = 0; i < 5; i++) {
      const key = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: `k${i}` });
      expect(key.status).toBe(201);
      const t = performance.now();
      expect((await owner.delete(`/api/v1/workspaces/${ws}/api-keys/${key.body.id}`)).status).toBe(204);
      revokeMs.push(performance.now() - t);
    }
    // A keyed write: the gateway claims the key in the bucket of key owners, and a second
    // service refuses it (that the claim went through, and was not skipped as NATS being away).
    const keyed = { headers: { 'idempotency-key': 'nats-permissions-key' } };
    expect((await owner.post(`/api/v1/workspaces/${ws}/vpcs/${vpc}/secrets`, { name: 'n', values: { K: 'v' } }, keyed)).status).toBe(201);
    expect((await owner.post(`/api/v1/workspaces/${ws}/vpcs/${vpc}/services`, { name: 'n' }, keyed)).status).toBe(422);
    const obs = await as('observer');
    obs.sub('_INBOX.observer.info');
    let kinds: string[] = [];
    const eventsUntil = Date.now() + 10_000;
    while (!(kinds.includes('api_key_revoked') && kinds.includes('secret_created'))) {
      if (Date.now() > eventsUntil) throw new Error(`events missing: ${kinds.join(', ')}`);
      obs.messages.length = 0;
      obs.pub('$JS.API.STREAM.INFO.PIER_EVENTS', JSON.stringify({ subjects_filter: `pier.events.${ws}.>` }), '_INBOX.observer.info');
      await obs.ping();
      await settle();
      const info = JSON.parse(obs.messages[0]?.data ?? '{}') as { state?: { subjects?: Record<string, number> } };
      kinds = Object.keys(info.state?.subjects ?? {}).map((s) => s.split('.')[4]!);
    }
    // Events reads them through its own durable consumer, as its user may: the audit log has them.
    const logUntil = Date.now() + 20_000;
    for (;;) {
      const stored = (await owner.get(`/api/v1/workspaces/${ws}/events?type=api_key.revoked`)).body.items as unknown[];
      if (stored.length === 5) break;
      if (Date.now() > logUntil) throw new Error(`the audit log has ${stored.length} of 5 revocations; server log:\n${violations().join('\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    console.info(`revocations answered in ${revokeMs.map((ms) => ms.toFixed(0)).join(', ')} ms (the lease is 500 ms: acknowledged, not waited out)`);
    expect(violations()).toEqual([]);
  });
});

describe('what no service user can do', () => {
  it('connect without a password, or with a wrong one', async () => {
    for (const c of [await natsWire(url), await natsWire(url, { user: 'compute', password: 'wrong' })]) {
      opened.push(c);
      expect(c.errors).toEqual(["-ERR 'Authorization Violation'"]);
      expect(c.closed).toBe(true);
    }
  });

  it("read any tenant's events: no user may subscribe to them or make a consumer of the stream", async () => {
    const obs = await as('observer');
    for (const user of NATS_USERS) {
      const c = await as(user);
      c.sub('pier.events.>');
      c.sub('>');
      c.sub('_INBOX.>');
      c.pub('$JS.API.CONSUMER.CREATE.PIER_EVENTS', JSON.stringify({ stream_name: 'PIER_EVENTS', config: { deliver_policy: 'all' } }), `_INBOX.${user}.c`);
      await c.ping();
      obs.pub(`pier.events.${p.bootstrap.workspaceId}._.probe.x`, '{}');
      await obs.ping();
      await settle();
      expect({ user, messages: c.messages }).toEqual({ user, messages: [] });
      expect(c.errors).toEqual([
        `-ERR 'Permissions Violation for Subscription to "pier.events.>"'`,
        `-ERR 'Permissions Violation for Subscription to ">"'`,
        `-ERR 'Permissions Violation for Subscription to "_INBOX.>"'`,
        `-ERR 'Permissions Violation for Publish to "$JS.API.CONSUMER.CREATE.PIER_EVENTS"'`,
      ]);
    }
  });

  it('publish an epoch tick unless it is auth, or an acknowledgement unless it is the gateway', async () => {
    const obs = await as('observer');
    obs.sub(epochSubject('forged'));
    obs.sub(epochAckSubject('forged'));
    await obs.ping();
    for (const user of NATS_USERS) {
      const c = await as(user);
      const tick = JSON.stringify({ epoch: 1, at: Date.now(), lease: 3_600_000 });
      c.pub(epochSubject('forged'), tick);
      c.pub(epochAckSubject('forged'), JSON.stringify({ holder: 'forged', epoch: 1 }));
      await c.ping();
      const expected = [
        ...(user === 'auth' ? [] : [`-ERR 'Permissions Violation for Publish to "${epochSubject('forged')}"'`]),
        ...(user === 'gateway' ? [] : [`-ERR 'Permissions Violation for Publish to "${epochAckSubject('forged')}"'`]),
      ];
      expect({ user, errors: c.errors }).toEqual({ user, errors: expected });
    }
    await settle();
    // Only auth's tick and the gateway's acknowledgement arrived.
    expect(obs.messages.map((m) => m.subject).sort()).toEqual([epochAckSubject('forged'), epochSubject('forged')].sort());
    // The server logs each refusal: what the first test found none of.
    expect(violations().some((l) => l.includes('User "compute"') && l.includes(epochSubject('forged')))).toBe(true);
  });

  it("read another user's replies, or follow ticks and acknowledgements it has no business with", async () => {
    for (const user of NATS_USERS) {
      const c = await as(user);
      const other = user === 'auth' ? 'gateway' : 'auth';
      c.sub(`_INBOX.${other}.>`);
      if (user !== 'gateway') c.sub(epochSubject(installation));
      if (user !== 'auth') c.sub(epochAckSubject(installation));
      await c.ping();
      expect({ user, errors: c.errors }).toEqual({
        user,
        errors: [
          `-ERR 'Permissions Violation for Subscription to "_INBOX.${other}.>"'`,
          ...(user !== 'gateway' ? [`-ERR 'Permissions Violation for Subscription to "${epochSubject(installation)}"'`] : []),
          ...(user !== 'auth' ? [`-ERR 'Permissions Violation for Subscription to "${epochAckSubject(installation)}"'`] : []),
        ],
      });
    }
  });
});
