// The gateway's rate limits over real HTTP, with real auth and real API keys: a bucket per
// token, one per source address for requests without a valid token, the IETF draft's
// RateLimit-* fields on every /api/v1 response and 429 `rate_limited` with Retry-After.
// Small limits (burst 5, one request a second) keep it quick. The gateway trusts one proxy
// hop, so each test speaks from its own X-Forwarded-For address.
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPierClient, unwrap } from '@pier/sdk';
import { startPlatform, type ApiResponse, type Platform } from '../support/platform.ts';

let p: Platform;
let ws: string;
const keys: string[] = [];

beforeAll(async () => {
  p = await startPlatform({
    env: {
      gateway: {
        PIER_RATE_LIMIT_TOKEN_PER_HOUR: '3600',
        PIER_RATE_LIMIT_TOKEN_BURST: '5',
        PIER_RATE_LIMIT_ADDRESS_PER_HOUR: '3600',
        PIER_RATE_LIMIT_ADDRESS_BURST: '5',
        PIER_TRUSTED_PROXY_HOPS: '1',
      },
    },
  });
  ws = p.bootstrap.workspaceId;
  const owner = p.api(p.bootstrap.token);
  for (const name of ['a', 'b', 'c', 'sdk']) {
    const res = await owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name }, { headers: { 'x-forwarded-for': '192.0.2.1' } });
    expect(res.status).toBe(201);
    keys.push(res.body.key);
  }
}, 60_000);

afterAll(async () => {
  await p?.stop();
});

const from = (address: string) => ({ headers: { 'x-forwarded-for': address } });
const limitOf = (res: ApiResponse) => ({
  limit: res.headers.get('ratelimit-limit'),
  remaining: res.headers.get('ratelimit-remaining'),
  reset: res.headers.get('ratelimit-reset'),
  retryAfter: res.headers.get('retry-after'),
});

/** Sends until refused (at most `max` requests); returns every response. */
async function exhaust(send: () => Promise<ApiResponse>, max = 12): Promise<ApiResponse[]> {
  const seen: ApiResponse[] = [];
  while (seen.length < max) {
    const res = await send();
    seen.push(res);
    if (res.status === 429) break;
  }
  return seen;
}

describe('per token', () => {
  it('every response carries the fields, Remaining counting down — errors too', async () => {
    const a = p.api(keys[0]);
    const ok1 = await a.get('/api/v1/workspaces', from('198.51.100.1'));
    const ok2 = await a.get(`/api/v1/workspaces/${ws}/api-keys`, from('198.51.100.1'));
    const notFound = await a.get('/api/v1/workspaces/00000000-0000-4000-8000-000000000000/api-keys', from('198.51.100.1'));
    expect([ok1.status, ok2.status, notFound.status]).toEqual([200, 200, 404]);
    expect(limitOf(ok1)).toMatchObject({ limit: '5', retryAfter: null });
    const remaining = [ok1, ok2, notFound].map((r) => Number(r.headers.get('ratelimit-remaining')));
    expect(remaining[1]).toBeLessThan(remaining[0]!);
    expect(remaining[2]).toBeLessThan(remaining[1]!);
    const reset = Number(notFound.headers.get('ratelimit-reset'));
    expect(reset).toBeGreaterThanOrEqual(1);
    expect(reset).toBeLessThanOrEqual(5);
  });

  it("exhaustion is a 429 rate_limited with Retry-After; another token's budget is untouched; the bucket refills", async () => {
    const b = p.api(keys[1]);
    const seen = await exhaust(() => b.get(`/api/v1/workspaces/${ws}/api-keys`, from('198.51.100.2')));
    const refused = seen.at(-1)!;
    expect(refused.status).toBe(429);
    expect(seen.length).toBeGreaterThanOrEqual(6);
    expect(refused.body).toEqual({ error: expect.stringContaining('rate limit exceeded'), code: 'rate_limited' });
    expect(limitOf(refused)).toMatchObject({ limit: '5', remaining: '0', retryAfter: '1' });
    expect(Number(refused.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(4);
    expect(refused.headers.get('x-request-id')).toBeTruthy();

    // Same address, another token: a full bucket of its own.
    const c = await p.api(keys[2]).get(`/api/v1/workspaces/${ws}/api-keys`, from('198.51.100.2'));
    expect(c.status).toBe(200);
    expect(limitOf(c)).toMatchObject({ limit: '5', remaining: '4' });

    // One request a second comes back.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const again = await b.get(`/api/v1/workspaces/${ws}/api-keys`, from('198.51.100.2'));
    expect(again.status).toBe(200);
    expect(limitOf(again)).toMatchObject({ remaining: '0' });
    expect((await b.get(`/api/v1/workspaces/${ws}/api-keys`, from('198.51.100.2'))).status).toBe(429);
  });
});

describe('per address, before authentication', () => {
  it('the SDK waits out a 429 by its Retry-After instead of failing', async () => {
    let refused = 0;
    const counting: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (res.status === 429) refused++;
      return res;
    };
    const sdk = createPierClient({ baseUrl: p.gatewayUrl, token: keys[3], fetch: counting });
    const started = Date.now();
    // Twice the burst: the second half waits for the bucket (one request a second).
    for (let i = 0; i < 10; i++) {
      await unwrap(sdk.GET('/api/v1/workspaces/{workspaceID}/api-keys', { params: { path: { workspaceID: ws } } }));
    }
    expect(refused).toBeGreaterThan(0);
    expect(Date.now() - started).toBeGreaterThan(3000);
  }, 30_000);

  it('requests without a token count against the address, and only that address', async () => {
    const anonymous = p.api();
    const seen = await exhaust(() => anonymous.get(`/api/v1/workspaces/${ws}/api-keys`, from('203.0.113.7')));
    expect(seen.slice(0, -1).every((r) => r.status === 401 && r.body.code === 'missing_token' && r.headers.get('ratelimit-limit') === '5')).toBe(true);
    const refused = seen.at(-1)!;
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('rate_limited');
    expect(limitOf(refused)).toMatchObject({ limit: '5', remaining: '0', retryAfter: '1' });
    // The public OpenAPI document counts too.
    expect((await anonymous.get('/api/v1/openapi.json', from('203.0.113.7'))).status).toBe(429);

    const elsewhere = await anonymous.get(`/api/v1/workspaces/${ws}/api-keys`, from('203.0.113.8'));
    expect(elsewhere.status).toBe(401);
    expect(limitOf(elsewhere)).toMatchObject({ limit: '5', remaining: '4' });
  });

  it('guessed tokens count against the address; a token already accepted keeps its own bucket', async () => {
    const known = p.api(keys[0]);
    expect((await known.get('/api/v1/workspaces', from('203.0.113.9'))).status).toBe(200);
    let n = 0;
    const seen = await exhaust(() => p.api(`sk-${String(n++).padStart(64, '0')}`).get('/api/v1/workspaces', from('203.0.113.9')));
    expect(seen.slice(0, -1).every((r) => r.status === 401 && r.body.code === 'invalid_api_key')).toBe(true);
    expect(seen.at(-1)!.status).toBe(429);
    expect(seen.at(-1)!.body.code).toBe('rate_limited');
    expect((await known.get('/api/v1/workspaces', from('203.0.113.9'))).status).toBe(200);
  });

  it('a WebSocket handshake is one request; a refused one carries the fields too', async () => {
    const url = `${p.gatewayUrl.replace('http', 'ws')}/api/v1/workspaces/${ws}/vpcs/${p.bootstrap.vpcId}/services/00000000-0000-4000-8000-000000000000/exec`;
    const handshake = (address: string, query = '') =>
      new Promise<{ status?: number; headers: Record<string, unknown> }>((resolve, reject) => {
        const socket = new WebSocket(url + query, { headers: { 'x-forwarded-for': address } });
        socket.once('unexpected-response', (_req, res) => {
          res.resume();
          resolve({ status: res.statusCode, headers: res.headers });
        });
        socket.once('open', () => {
          socket.close();
          resolve({ status: 101, headers: {} });
        });
        socket.once('error', reject);
      });
    const statuses: number[] = [];
    let last: { status?: number; headers: Record<string, unknown> } = { headers: {} };
    for (let i = 0; i < 12 && last.status !== 429; i++) {
      last = await handshake('203.0.113.10');
      statuses.push(last.status!);
    }
    expect(statuses.slice(0, -1).every((s) => s === 401)).toBe(true);
    expect(last).toMatchObject({ status: 429, headers: { 'ratelimit-limit': '5', 'ratelimit-remaining': '0', 'retry-after': '1' } });
    // Passed through: compute's own answer (no such service) gets the token's fields added.
    expect(await handshake('203.0.113.11', `?access_token=${keys[2]}`)).toMatchObject({ status: 404, headers: { 'ratelimit-limit': '5' } });
  });
});
