// `./pier up`'s own nats-server (deploy/local/nats.ts) admits only the services' users: an
// anonymous client (before: anyone on the machine) neither reads events nor forges ticks.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '@pier/testing';
import { findNats, type RunningNats } from '../../deploy/local/nats.ts';
import { parentDeath } from '../../deploy/local/parent-death.ts';
import { which } from '../../deploy/local/which.ts';
import { NATS_USERS, type NatsUser } from '../../deploy/platform/nats-config.ts';
import { natsWire, type NatsWire } from '../support/nats-wire.ts';

let home: string;
let nats: RunningNats;
let url: string;
const opened: NatsWire[] = [];
const passwords = Object.fromEntries(NATS_USERS.map((u) => [u, randomBytes(12).toString('hex')])) as Record<NatsUser, string>;

beforeAll(async () => {
  if (!which('nats-server')) throw new Error('nats-server is not on PATH: ./pier test installs it on Debian (apt-get install nats-server)');
  home = await mkdtemp(path.join(tmpdir(), 'pier-launcher-nats-'));
  const previous = process.env.PIER_NATS_URL;
  delete process.env.PIER_NATS_URL;
  try {
    nats = await findNats(home, await freePort(), parentDeath(), passwords);
  } finally {
    if (previous !== undefined) process.env.PIER_NATS_URL = previous;
  }
  url = nats.url;
});

afterAll(async () => {
  for (const c of opened) c.close();
  await nats?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

it('writes its configuration, with every password, readable by the owner alone', async () => {
  expect((await stat(path.join(home, 'nats-server.conf'))).mode & 0o777).toBe(0o600);
  expect(nats.credentials('compute')).toEqual({ PIER_NATS_USER: 'compute', PIER_NATS_PASSWORD: passwords.compute });
});

it('refuses an anonymous client: it reads no event and forges no tick', async () => {
  const spy = await natsWire(url);
  opened.push(spy);
  expect(spy.errors).toEqual(["-ERR 'Authorization Violation'"]);
  expect(spy.closed).toBe(true);
});

it('admits a service with its own password, to its own subjects only', async () => {
  const compute = await natsWire(url, { user: 'compute', password: nats.credentials('compute').PIER_NATS_PASSWORD });
  opened.push(compute);
  compute.sub('pier.events.>');
  compute.pub('pier.auth.epoch.x', JSON.stringify({ epoch: 1, at: Date.now(), lease: 3_600_000 }));
  compute.pub('pier.events.ws._.probe.x', '{}');
  await compute.ping();
  expect(compute.closed).toBe(false);
  expect(compute.errors).toEqual([
    `-ERR 'Permissions Violation for Subscription to "pier.events.>"'`,
    `-ERR 'Permissions Violation for Publish to "pier.auth.epoch.x"'`,
  ]);
});
