// A forged epoch tick cannot stretch the gateway's answer cache. Anything that may publish
// on the epoch subject can send one; before the gateway clamped ticks, a tick saying
// "lease: one hour" (or dated an hour ahead) kept the cache usable for an hour, so a
// gateway cut off from auth's real ticks would serve a revoked key's cached answer that
// long. Real platform, real NATS; the figure is the gateway's own lease gauge.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { AUTH_CACHE_LEASE_MS, epochSubject, type EpochTick } from '@pier/kit';
import { startPlatform, type Platform } from '../support/platform.ts';
import { natsWire, type NatsWire } from '../support/nats-wire.ts';

const HOUR = 3_600_000;
let p: Platform;
let nc: NatsWire;
let installation: string;
let epoch: number;

async function leaseSeconds(): Promise<number> {
  const text = await (await fetch(`${p.serviceUrls.gatewayMetrics}/metrics`)).text();
  const raw = /^pier_gateway_auth_cache_lease_seconds(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1];
  return raw === '-Inf' ? -Infinity : Number(raw);
}

beforeAll(async () => {
  p = await startPlatform();
  // The gateway follows the installation auth names in its first answer.
  expect((await p.api(p.bootstrap.token).get('/api/v1/me')).status).toBe(200);
  const until = Date.now() + 20_000;
  while (!((await leaseSeconds()) > 0)) {
    if (Date.now() > until) throw new Error('the gateway got no lease within 20 s');
    await new Promise((r) => setTimeout(r, 50));
  }
  const db = new pg.Client({ connectionString: p.database.adminUrl });
  await db.connect();
  const { rows } = await db.query<{ installation: string; epoch: number }>('select installation, epoch from auth.auth_epoch where id = 1');
  await db.end();
  ({ installation, epoch } = rows[0]!);
  nc = await natsWire(p.natsUrl);
}, 90_000);

afterAll(async () => {
  nc?.close();
  await p?.stop();
});

/** Publishes the tick a few times (so it lands between auth's own), then reads the gauge. */
async function afterForged(tick: EpochTick): Promise<number> {
  for (let i = 0; i < 5; i++) {
    nc.pub(epochSubject(installation), JSON.stringify(tick));
    await nc.ping();
    await new Promise((r) => setTimeout(r, 20));
  }
  return leaseSeconds();
}

describe('a forged epoch tick', () => {
  it('with a 1-hour lease leaves the gateway a lease of at most its maximum (500 ms)', async () => {
    const left = await afterForged({ epoch, at: Date.now(), lease: HOUR });
    console.info(`forged 1-hour lease: the gateway's cache is usable for ${left.toFixed(3)} s`);
    expect(left).toBeLessThanOrEqual(AUTH_CACHE_LEASE_MS / 1000);
  });

  it('dated an hour ahead buys nothing beyond the maximum either', async () => {
    const left = await afterForged({ epoch, at: Date.now() + HOUR, lease: AUTH_CACHE_LEASE_MS });
    console.info(`forged tick dated an hour ahead: the gateway's cache is usable for ${left.toFixed(3)} s`);
    expect(left).toBeLessThanOrEqual(AUTH_CACHE_LEASE_MS / 1000);
  });
});
