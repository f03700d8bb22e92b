// Health and metrics across the platform: each service answers /readyz and /metrics on its
// own port, counts what the gateway proxied to it by route template, and the gateway
// exposes neither (not at its root, not under /api/v1).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleValue, scrape } from '@pier/testing';
import { startPlatform, type Platform } from '../support/platform.ts';

let p: Platform;

beforeAll(async () => {
  p = await startPlatform();
}, 120_000);

afterAll(async () => {
  await p?.stop();
});

const SERVICES = {
  auth: { own: [], route: '/api/v1/workspaces', path: () => '/api/v1/workspaces' },
  compute: { own: ['cluster'], route: '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services', path: () => vpcPath('/services') },
  databases: { own: ['cluster'], route: '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases', path: () => vpcPath('/databases') },
  secrets: { own: ['store'], route: '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/secrets', path: () => vpcPath('/secrets') },
} as const;
const vpcPath = (rest: string) => `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}${rest}`;

describe('health and metrics', () => {
  for (const [name, spec] of Object.entries(SERVICES)) {
    it(`${name}: /readyz names its dependencies, /metrics counts a proxied request by its route template`, async () => {
      const base = p.serviceUrls[name as keyof typeof SERVICES]!;
      const ready = await fetch(`${base}/readyz`);
      const body = (await ready.json()) as { status: string; service: string; checks: Record<string, { ok: boolean }> };
      expect(ready.status, JSON.stringify(body)).toBe(200);
      expect(body.status).toBe('ready');
      expect(body.service).toBe(name);
      expect(Object.keys(body.checks).sort()).toEqual(['database', 'nats', ...spec.own].sort());

      const before = sampleValue(await scrape(base), 'pier_http_request_duration_seconds_count', { method: 'GET', route: spec.route, status: '200' }) ?? 0;
      const res = await p.api(p.bootstrap.token).get(spec.path());
      expect(res.status).toBe(200);
      const samples = await scrape(base);
      expect(sampleValue(samples, 'pier_http_request_duration_seconds_count', { method: 'GET', route: spec.route, status: '200', service: name })).toBe(
        before + 1,
      );
      expect(sampleValue(samples, 'pier_outbox_backlog_rows', { service: name })).toBeGreaterThanOrEqual(0);
      expect(sampleValue(samples, 'pier_db_pool_connections', { service: name, state: 'used' })).toBeGreaterThanOrEqual(0);
    });
  }

  it('databases exposes its databases by status, every status present', async () => {
    const samples = await scrape(p.serviceUrls.databases!);
    for (const status of ['creating', 'running', 'error', 'deleting']) {
      expect(sampleValue(samples, 'pier_databases_databases', { status, service: 'databases' }), status).toBe(0);
    }
  });

  it("auth's /metrics times the gateway's gRPC Authenticate calls by status code", async () => {
    const method = '/auth.v1.Auth/Authenticate';
    const count = async (code: string) => sampleValue(await scrape(p.serviceUrls.auth), 'pier_grpc_server_duration_seconds_count', { method, code }) ?? 0;
    const [ok, refused] = [await count('OK'), await count('UNAUTHENTICATED')];
    expect((await p.api(p.bootstrap.token).get('/api/v1/workspaces')).status).toBe(200);
    expect((await p.api('pier_not_a_real_token').get('/api/v1/workspaces')).status).toBe(401);
    expect(await count('OK')).toBe(ok + 1);
    expect(await count('UNAUTHENTICATED')).toBe(refused + 1);
  });

  it("secrets and databases time their cluster calls at the port's grain", async () => {
    const calls = async (service: 'secrets' | 'databases', operation: string) =>
      sampleValue(await scrape(p.serviceUrls[service]!), 'pier_cluster_call_duration_seconds_count', { operation, outcome: 'ok', service }) ?? 0;
    const applied = await calls('secrets', 'store.apply');
    expect((await p.api(p.bootstrap.token).post(vpcPath('/secrets'), { name: 'timed', values: { A: '1' } })).status).toBe(201);
    expect(await calls('secrets', 'store.apply')).toBe(applied + 1);
    // Readiness pings the cluster through the timed port.
    const pinged = await calls('databases', 'cluster.ping');
    expect((await fetch(`${p.serviceUrls.databases}/readyz`)).status).toBe(200);
    expect(await calls('databases', 'cluster.ping')).toBe(pinged + 1);
  });

  it('compute times its gRPC calls to secrets, as the client sees them', async () => {
    const method = '/secrets.v1.Secrets/CheckReferences';
    const count = async () => sampleValue(await scrape(p.serviceUrls.compute!), 'pier_grpc_client_duration_seconds_count', { method, code: 'OK' }) ?? 0;
    const before = await count();
    const secret = await p.api(p.bootstrap.token).post(vpcPath('/secrets'), { name: 'referenced', values: { K: 'v' } });
    const created = await p.api(p.bootstrap.token).post(vpcPath('/services'), { name: 'grpc-client' });
    expect(created.status).toBe(201);
    const env = await p
      .api(p.bootstrap.token)
      .put(vpcPath(`/services/${created.body.id}/env`), { variables: [{ key: 'K', secret_id: secret.body.id, secret_key: 'K' }] });
    expect(env.status, JSON.stringify(env.body)).toBeLessThan(300);
    expect(await count()).toBeGreaterThan(before);
  });

  it('the gateway answers /metrics, /healthz and /readyz on its internal port', async () => {
    const base = p.serviceUrls.gatewayMetrics!;
    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: 'ok', service: 'gateway' });
    const ready = await fetch(`${base}/readyz`);
    const body = (await ready.json()) as { status: string; checks: Record<string, { ok: boolean }> };
    expect(ready.status, JSON.stringify(body)).toBe(200);
    expect(Object.keys(body.checks).sort()).toEqual(['auth', 'compute', 'databases', 'events', 'secrets']);

    const count = async (upstream: string, status: string) =>
      sampleValue(await scrape(base), 'pier_gateway_request_duration_seconds_count', { method: 'GET', upstream, status, service: 'gateway' }) ?? 0;
    const [proxied, refused] = [await count('secrets', '200'), await count('secrets', '401')];
    expect((await p.api(p.bootstrap.token).get(vpcPath('/secrets'))).status).toBe(200);
    expect((await p.api('pier_not_a_real_token').get(vpcPath('/secrets'))).status).toBe(401);
    expect(await count('secrets', '200')).toBe(proxied + 1);
    expect(await count('secrets', '401')).toBe(refused + 1);
    const samples = await scrape(base);
    expect(sampleValue(samples, 'pier_grpc_client_duration_seconds_count', { method: '/auth.v1.Auth/Authenticate', code: 'OK' })).toBeGreaterThan(0);
    expect(sampleValue(samples, 'process_cpu_user_seconds_total', { service: 'gateway' })).toBeGreaterThan(0);
  });

  it('the gateway serves neither /metrics nor /readyz on its public port', async () => {
    const api = p.api(p.bootstrap.token);
    for (const path of ['/metrics', '/readyz', '/api/v1/metrics', '/api/v1/readyz', '/api/v1/healthz']) {
      const res = await api.get(path);
      expect(res.status, path).toBe(404);
      expect(JSON.stringify(res.body)).not.toMatch(/pier_http|process_cpu/);
    }
  });
});
