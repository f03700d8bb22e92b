// The typed SDK against the running platform: the document it was generated from is the
// one the gateway serves, calls are typed end to end, errors come back as {error, code,
// field?} values (or a thrown PierApiError), and paginate walks every page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPierClient, paginate, PierApiError, unwrap, type PierClient } from '@pier/sdk';
import { buildOpenApiDocument } from '../../packages/sdk/scripts/document.ts';
import { startPlatform, type Platform } from '../support/platform.ts';

let p: Platform;
let sdk: PierClient;
let ws: string;

beforeAll(async () => {
  p = await startPlatform();
  sdk = createPierClient({ baseUrl: p.gatewayUrl, token: p.bootstrap.token, userAgent: 'pier-sdk-test' });
  ws = p.bootstrap.workspaceId;
});
afterAll(async () => {
  await p?.stop();
});

describe('the SDK', () => {
  it('was generated from the document the gateway serves', async () => {
    const served = await (await fetch(`${p.gatewayUrl}/api/v1/openapi.json`)).json();
    expect(served).toEqual(buildOpenApiDocument());
  });

  it('makes typed calls with the token', async () => {
    const { data, error, response } = await sdk.GET('/api/v1/workspaces');
    expect(response.status).toBe(200);
    expect(error).toBeUndefined();
    expect(data!.items.map((w) => w.id)).toContain(ws);
    const created = await unwrap(sdk.POST('/api/v1/workspaces/{workspaceID}/api-keys', { params: { path: { workspaceID: ws } }, body: { name: 'sdk-key' } }));
    expect(created.key).toMatch(/^sk-[0-9a-f]{64}$/);
  });

  it('gives errors as typed values, and unwrap throws them with status, code and field', async () => {
    const { error, response } = await sdk.POST('/api/v1/workspaces/{workspaceID}/api-keys', {
      params: { path: { workspaceID: ws } },
      body: { name: 'x', expires_in_days: -1 },
    });
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ code: 'invalid_request', field: 'expires_in_days' });

    const unknownKey = createPierClient({ baseUrl: p.gatewayUrl, token: `sk-${'0'.repeat(64)}` });
    const thrown = await unwrap(unknownKey.GET('/api/v1/workspaces')).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(PierApiError);
    expect(thrown).toMatchObject({ status: 401, message: 'invalid or expired API key' });

    const nowhere = createPierClient({ baseUrl: 'http://127.0.0.1:1' });
    expect(await unwrap(nowhere.GET('/api/v1/workspaces')).catch((e: unknown) => e)).toMatchObject({ status: 0, code: 'unreachable' });
  });

  it('walks every page of a list with paginate', async () => {
    for (let i = 0; i < 5; i++) {
      await unwrap(sdk.POST('/api/v1/workspaces/{workspaceID}/api-keys', { params: { path: { workspaceID: ws } }, body: { name: `page-${i}` } }));
    }
    const pages: number[] = [];
    const names: string[] = [];
    for await (const key of paginate(async (cursor) => {
      const page = await unwrap(sdk.GET('/api/v1/workspaces/{workspaceID}/api-keys', { params: { path: { workspaceID: ws }, query: { limit: 2, cursor } } }));
      pages.push(page.items.length);
      return page;
    })) {
      names.push(key.name);
    }
    expect(names).toEqual(expect.arrayContaining(['bootstrap', 'sdk-key', 'page-0', 'page-4']));
    expect(new Set(names).size).toBe(names.length);
    expect(pages.length).toBeGreaterThanOrEqual(4);
    expect(pages.every((n) => n <= 2)).toBe(true);
  });
});
