// Routes that are not JSON in or out: a raw request body (an uploaded archive) with its
// content type and size limit, and a server-sent event stream with keep-alive comments
// that stops when the client goes away.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createServiceApp,
  createLogger,
  defineRoute,
  generateIdentityKeys,
  importIdentityKey,
  IdentityVerifier,
  listen,
  close,
  signIdentity,
  IDENTITY_HEADER,
  type ServerSentEvent,
} from '../src/index.ts';

const WS = '11111111-1111-4111-8111-111111111111';
const VPC = '22222222-2222-4222-8222-222222222222';
const base = `/api/v1/workspaces/${WS}/vpcs/${VPC}`;

let server: http.Server;
let url: string;
let token: string;
/** Set when the event stream's source saw its client go. */
let sourceStopped = false;

beforeAll(async () => {
  const keys = await generateIdentityKeys();
  token = await signIdentity(await importIdentityKey(keys.privateJwk), { kind: 'user', subject: 'u', workspaceId: WS, vpcId: VPC, role: 'owner' }, 60);
  const routes = [
    defineRoute({
      method: 'post',
      path: `/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/uploads`,
      summary: 'upload',
      tag: 't',
      access: 'Admin',
      rawBody: { contentTypes: ['application/gzip', 'application/x-tar'], limitBytes: 1000, description: 'an archive' },
      responses: { 200: { description: 'bytes read' } },
      handler: async ({ stream }) => {
        let bytes = 0;
        for await (const chunk of stream!) bytes += (chunk as Buffer).length;
        return { status: 200, body: { bytes } };
      },
    }),
    defineRoute({
      method: 'get',
      path: `/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/ticks`,
      summary: 'ticks',
      tag: 't',
      access: 'Member',
      responses: { 200: { description: 'events', contentType: 'text/event-stream' } },
      handler: async ({ signal }) => {
        async function* ticks(): AsyncIterable<ServerSentEvent> {
          yield { event: 'line', data: { n: 1 } };
          yield { data: 'two' };
          // Then nothing for a while: the client sees keep-alive comments until it leaves.
          await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
          sourceStopped = true;
        }
        return { status: 200, events: ticks() };
      },
    }),
  ];
  const app = createServiceApp({
    service: 't',
    logger: createLogger('t', 'silent'),
    verifier: await IdentityVerifier.fromJwk(keys.publicJwk),
    routes,
    keepAliveMs: 100,
  });
  const started = await listen(app, 0);
  server = started.server;
  url = `http://127.0.0.1:${started.port}`;
});

afterAll(async () => {
  await close(server);
});

const upload = (body: Buffer, type: string) =>
  fetch(`${url}${base}/uploads`, { method: 'POST', headers: { [IDENTITY_HEADER]: token, 'content-type': type }, body: new Uint8Array(body) }).then(
    async (r) => ({
      status: r.status,
      body: await r.json(),
    }),
  );

describe('a raw request body', () => {
  it('streams to the handler, within its limit', async () => {
    expect(await upload(Buffer.alloc(1000), 'application/gzip')).toEqual({ status: 200, body: { bytes: 1000 } });
  });

  it('is a 413 over the limit, declared or not, and a 400 of another type', async () => {
    const over = await upload(Buffer.alloc(1001), 'application/x-tar');
    expect(over).toMatchObject({ status: 413, body: { code: 'payload_too_large' } });
    // Chunked, no length declared: refused once the limit is passed.
    const chunked = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        `${url}${base}/uploads`,
        { method: 'POST', headers: { [IDENTITY_HEADER]: token, 'content-type': 'application/gzip' } },
        (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode!, body: text }));
        },
      );
      req.on('error', reject);
      for (let i = 0; i < 5; i++) req.write(Buffer.alloc(300));
      req.end();
    });
    expect(chunked.status).toBe(413);
    expect(JSON.parse(chunked.body).code).toBe('payload_too_large');
    const wrongType = await upload(Buffer.alloc(10), 'text/plain');
    expect(wrongType).toMatchObject({ status: 400, body: { code: 'invalid_content_type' } });
  });
});

describe('an event stream', () => {
  it('sends events, keep-alive comments while quiet, and stops its source when the client goes', async () => {
    const controller = new AbortController();
    const res = await fetch(`${url}${base}/ticks`, { headers: { [IDENTITY_HEADER]: token }, signal: controller.signal });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = res.body!.getReader();
    let text = '';
    while ((text.match(/: keep-alive/g) ?? []).length < 2) text += new TextDecoder().decode((await reader.read()).value);
    expect(text.startsWith('event: line\ndata: {"n":1}\n\ndata: "two"\n\n')).toBe(true);
    controller.abort();
    for (let i = 0; i < 50 && !sourceStopped; i++) await new Promise((r) => setTimeout(r, 20));
    expect(sourceStopped).toBe(true);
  });
});
