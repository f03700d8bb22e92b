// The SDK's retries (retry.ts) against a real HTTP server: a 504 is sent again for a read
// and a keyed write, never for a write the caller sent without a key.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retryingFetch } from '../src/retry.ts';

let server: http.Server;
let base: string;
/** Requests seen per path; each path answers 504 to its first request, then 200. */
const seen = new Map<string, (string | undefined)[]>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const keys = seen.get(req.url!) ?? [];
    keys.push(req.headers['idempotency-key'] as string | undefined);
    seen.set(req.url!, keys);
    res.writeHead(keys.length === 1 ? 504 : 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(keys.length === 1 ? { error: 'compute service did not answer within 30000 ms', code: 'upstream_timeout' } : { ok: true }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise((r) => server.close(r)));

describe('the SDK after a 504', () => {
  const retrying = retryingFetch(fetch);

  it('sends a read again', async () => {
    expect((await retrying(`${base}/read`)).status).toBe(200);
    expect(seen.get('/read')).toHaveLength(2);
  });

  it('sends a write again with the same Idempotency-Key', async () => {
    expect((await retrying(`${base}/write`, { method: 'POST', body: '{}' })).status).toBe(200);
    const keys = seen.get('/write')!;
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
  });

  it('answers the 504 to a write sent without a key', async () => {
    const keyless = retryingFetch(fetch, { idempotencyKeys: false });
    expect((await keyless(`${base}/keyless`, { method: 'POST', body: '{}' })).status).toBe(504);
    expect(seen.get('/keyless')).toEqual([undefined]);
  });
});
