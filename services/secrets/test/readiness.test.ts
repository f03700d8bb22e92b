// secrets' /readyz names its database, NATS and secret store; /metrics counts its routes
// by template. NATS sits behind a link the test cuts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { infra, readyz as readyzOf, sampleValue, scrape, socketLink, until } from '@pier/testing';
import { startSecrets, type Harness } from './support.ts';

let h: Harness;
const natsUrl = new URL(infra().natsUrl);
const nats = socketLink({ host: natsUrl.hostname, port: Number(natsUrl.port) });

beforeAll(async () => {
  await nats.up();
  h = await startSecrets({ PIER_NATS_URL: `nats://${nats.address}`, PIER_LOG_LEVEL: 'warn' });
});

const readyz = () => readyzOf(h.url);

afterAll(async () => {
  await h?.stop();
  await nats.down();
});

describe('secrets readiness and metrics', () => {
  it('is ready; /metrics counts a request by its route template and status', async () => {
    expect(await readyz()).toMatchObject({
      status: 200,
      body: { status: 'ready', checks: { database: { ok: true }, nats: { ok: true }, store: { ok: true } } },
    });
    expect((await h.get(h.base)).status).toBe(200);
    expect((await h.get(`${h.base}/sec_missing`)).status).toBe(404);
    const samples = await scrape(h.url);
    const route = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/secrets';
    expect(sampleValue(samples, 'pier_http_request_duration_seconds_count', { method: 'GET', route, status: '200', service: 'secrets' })).toBe(1);
    expect(sampleValue(samples, 'pier_http_request_duration_seconds_count', { method: 'GET', route: `${route}/{secretID}`, status: '404' })).toBe(1);
  });

  it('is not_ready naming NATS while the broker is away, and recovers', async () => {
    await nats.down();
    try {
      const down = await until(readyz, (r) => r.status === 503, 20_000);
      expect(down.body.status).toBe('not_ready');
      expect(down.body.checks.nats!.ok).toBe(false);
      expect(down.body.checks.database).toEqual({ ok: true });
      expect(down.body.checks.store).toEqual({ ok: true });
    } finally {
      await nats.up();
    }
    expect((await until(readyz, (r) => r.status === 200, 30_000)).body.checks.nats).toEqual({ ok: true });
  });

  it('is not_ready naming the store when its root is unusable', async () => {
    const root = h.env.PIER_SECRETS_STORE_DIR!;
    await rm(root, { recursive: true, force: true });
    await writeFile(root, 'not a directory');
    try {
      const r = await readyz();
      expect(r.status).toBe(503);
      expect(r.body.checks.store!.ok).toBe(false);
    } finally {
      await rm(root, { force: true });
      await mkdir(root, { recursive: true });
      await chmod(root, 0o700);
    }
    expect((await readyz()).status).toBe(200);
  });
});
