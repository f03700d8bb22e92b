// A graceful stop (drain.ts): readiness fails at once while requests are still served
// (each answer closing its connection), then event streams end with a `reconnect` event,
// and a request in flight finishes before the server closes.
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  createLogger,
  createServiceApp,
  defineRoute,
  Drain,
  generateIdentityKeys,
  IDENTITY_HEADER,
  IdentityVerifier,
  importIdentityKey,
  listen,
  signIdentity,
  type ServerSentEvent,
} from '../src/index.ts';

const WS = '11111111-1111-4111-8111-111111111111';
const VPC = '22222222-2222-4222-8222-222222222222';
const base = `/api/v1/workspaces/${WS}/vpcs/${VPC}`;

/** One request on a connection of its own: status, the Connection header, the body. */
function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; connection?: string; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers, agent: false }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

describe('a graceful stop', () => {
  it('leaves readiness first, ends streams with reconnect, and lets requests in flight finish', async () => {
    const keys = await generateIdentityKeys();
    const token = await signIdentity(await importIdentityKey(keys.privateJwk), { kind: 'user', subject: 'u', workspaceId: WS, vpcId: VPC, role: 'owner' }, 60);
    const auth = { [IDENTITY_HEADER]: token };
    let sourceStopped = false;
    const routes = [
      defineRoute({
        method: 'get',
        path: '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/slow',
        summary: 'slow',
        tag: 't',
        access: 'Member',
        responses: { 200: { description: 'done' } },
        handler: async () => {
          await new Promise((r) => setTimeout(r, 800));
          return { status: 200, body: { done: true } };
        },
      }),
      defineRoute({
        method: 'get',
        path: '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/ticks',
        summary: 'ticks',
        tag: 't',
        access: 'Member',
        responses: { 200: { description: 'events', contentType: 'text/event-stream' } },
        handler: async ({ signal }) => {
          async function* ticks(): AsyncIterable<ServerSentEvent> {
            yield { event: 'line', data: { n: 1 } };
            await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
            sourceStopped = true;
          }
          return { status: 200, events: ticks() };
        },
      }),
    ];
    const drain = new Drain();
    const log = createLogger('t', 'silent');
    const app = createServiceApp({
      service: 't',
      logger: log,
      verifier: await IdentityVerifier.fromJwk(keys.publicJwk),
      routes,
      drain,
      ready: async () => ({ status: 'ready', checks: {} }),
    });
    const { server, port } = await listen(app, 0);
    const url = `http://127.0.0.1:${port}`;
    expect((await get(`${url}/readyz`)).status).toBe(200);

    const stream = get(`${url}${base}/ticks`, auth);
    await new Promise((r) => setTimeout(r, 100));
    const stopped = drain.run(server, { delayMs: 600, graceMs: 5000 }, log);

    // Step 1: out of readiness, still serving, each answer closing its connection.
    const ready = await get(`${url}/readyz`);
    expect([ready.status, JSON.parse(ready.body).status, ready.connection]).toEqual([503, 'draining', 'close']);
    // A request that arrives now and outlasts the delay still gets its whole answer.
    const slow = get(`${url}${base}/slow`, auth);

    // Step 2: the stream's last event tells its client to reconnect; its source stopped.
    const streamed = await stream;
    expect(streamed.body).toContain('event: line');
    expect(streamed.body.trimEnd().endsWith('data: {"error":"the service is restarting: reconnect","code":"service_restarting"}')).toBe(true);
    expect(streamed.body).toContain('event: reconnect');
    expect(sourceStopped).toBe(true);

    // Step 3: the request in flight finished; then the server closed.
    const answered = await slow;
    expect([answered.status, JSON.parse(answered.body), answered.connection]).toEqual([200, { done: true }, 'close']);
    await stopped;
    expect(server.listening).toBe(false);
    await expect(get(`${url}/readyz`)).rejects.toThrow(/ECONNREFUSED/);
  });
});
