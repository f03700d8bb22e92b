// Webhooks against a real receiver: deliveries signed the Standard Webhooks way (checked
// here with an implementation of the scheme written from its specification, not the
// service's), retries on a short schedule while the receiver fails and delivery once it
// is back, an endpoint disabled after the whole schedule (with its event), redelivery with
// the same webhook-id, rotation (both signatures during the overlap), the test event, and
// the URL guard's corpus refused.
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CORPUS_DNS, REFUSED_URLS, TestDnsServer } from '@pier/testing';
import { startEvents, until, type Harness } from './support.ts';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  json: { type: string; timestamp: string; data: { id: string; type: string; actor: unknown } };
}

let h: Harness;
let dns: TestDnsServer;
let receiver: http.Server;
let url: string;
const received: Received[] = [];
/** What the receiver answers next: a status per request, then 200. */
const answers: number[] = [];

beforeAll(async () => {
  dns = await new TestDnsServer().start();
  for (const [name, records] of Object.entries(CORPUS_DNS)) dns.set(name, records);
  dns.set('receiver.pier.test', { A: ['127.0.0.1'] });
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body, json: JSON.parse(body) as Received['json'] });
      const status = answers.shift() ?? 200;
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(status === 200 ? 'thanks' : 'receiver is down');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  url = `http://receiver.pier.test:${(receiver.address() as { port: number }).port}/hook`;
  h = await startEvents({
    PIER_EVENTS_WEBHOOK_ALLOW_HTTP: 'true',
    // A name, not 127.0.0.1: the corpus's loopback literals must stay refused.
    PIER_EVENTS_WEBHOOK_ALLOWED_HOSTS: 'receiver.pier.test',
    PIER_DNS_RESOLVERS: dns.address,
    PIER_EVENTS_WEBHOOK_RETRY_SECONDS: '0.5,0.5',
  });
  await h.consumerReady();
}, 60_000);

afterAll(async () => {
  await h?.close();
  await dns?.stop();
  await new Promise((r) => receiver?.close(r));
});

/** Standard Webhooks verification, from the specification: any `v1,` signature of `id.timestamp.body` with the secret's bytes. */
function verifies(secret: string, r: Received): boolean {
  const id = String(r.headers['webhook-id']);
  const ts = String(r.headers['webhook-timestamp']);
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${ts}.${r.body}`).digest();
  return String(r.headers['webhook-signature'])
    .split(' ')
    .some((s) => {
      const [version, sig] = s.split(',');
      const given = Buffer.from(sig ?? '', 'base64');
      return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
    });
}

const hooks = () => `/api/v1/workspaces/${h.workspaceId}/webhooks`;
const receivedFor = (eventId: string) => received.filter((r) => r.json.data.id === eventId);
const waitReceived = (eventId: string, n = 1) =>
  until(
    async () => receivedFor(eventId),
    (rs) => rs.length >= n,
    20_000,
    50,
  );

async function createHook(events: string[] = ['secret.*']) {
  const res = await h.post(hooks(), { url, events, description: 'ci' }, 'admin');
  expect(res.status).toBe(201);
  return res.body as { id: string; secret: string; enabled: boolean };
}

describe('webhooks', () => {
  it('delivers a matching event, signed, with the event as data; the secret is shown once', async () => {
    const hook = await createHook(['secret.*']);
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    const detail = await h.get(`${hooks()}/${hook.id}`, 'admin');
    expect(detail.status).toBe(200);
    expect(detail.body.secret).toBeUndefined();
    expect(JSON.stringify((await h.get(hooks(), 'admin')).body)).not.toContain(hook.secret);

    const e = await h.publish({ kind: 'secret.created' });
    const other = await h.publish({ kind: 'service.created' });
    const [r] = await waitReceived(e.id);
    expect(verifies(hook.secret, r!)).toBe(true);
    expect(verifies('whsec_' + Buffer.alloc(24).toString('base64'), r!)).toBe(false);
    expect(r!.json).toMatchObject({ type: 'secret.created', timestamp: e.occurred_at, data: { id: e.id, type: 'secret.created', actor: e.actor } });
    expect(Math.abs(Number(r!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
    expect(r!.headers['content-type']).toBe('application/json');
    const deliveries = await until(
      async () => (await h.get(`${hooks()}/${hook.id}/deliveries`, 'admin')).body.items,
      (items: any[]) => items.some((d) => d.state === 'succeeded'),
      10_000,
      100,
    );
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ id: r!.headers['webhook-id'], event_id: e.id, state: 'succeeded' });
    expect(deliveries[0].attempts).toEqual([{ at: expect.any(String), status_code: 200, latency_ms: expect.any(Number), response: 'thanks', error: null }]);
    // Not asked for: never sent.
    expect(receivedFor(other.id)).toEqual([]);
    expect((await h.delete(hook.id)).status).toBe(204);
  });

  it('retries while the receiver fails, with the same webhook-id, and delivers once it is back', async () => {
    const hook = await createHook(['database.*']);
    answers.push(500, 503);
    const e = await h.publish({ kind: 'database.backup_failed' });
    const rs = await waitReceived(e.id, 3);
    expect(rs.map((r) => r.headers['webhook-id'])).toEqual(Array(3).fill(rs[0]!.headers['webhook-id']));
    for (const r of rs) expect(verifies(hook.secret, r)).toBe(true);
    const [d] = (await until(
      async () => (await h.get(`${hooks()}/${hook.id}/deliveries`, 'admin')).body.items,
      (items: any[]) => items[0]?.state === 'succeeded',
      10_000,
      100,
    )) as { attempts: { status_code: number; error: string | null }[] }[];
    expect(d!.attempts.map((a) => a.status_code)).toEqual([500, 503, 200]);
    expect(d!.attempts[0]!.error).toBe('answered 500');
    await h.delete(hook.id);
  });

  it('disables an endpoint whose delivery failed the whole schedule, saying so in an event; redelivery sends it again, same id', async () => {
    const hook = await createHook(['vpc.*']);
    answers.push(500, 500, 500);
    const e = await h.publish({ kind: 'vpc.created' });
    await waitReceived(e.id, 3);
    const disabled = await until(
      async () => (await h.get(`${hooks()}/${hook.id}`, 'admin')).body,
      (w: any) => !w.enabled,
      10_000,
      100,
    );
    expect(disabled.disabled_reason).toMatch(/every attempt of the retry schedule/);
    // The event says so, through the outbox, NATS and back (the platform's own: no actor).
    const said = await until(
      async () => (await h.get(`${h.base}?type=webhook.disabled&resource_id=${hook.id}`)).body.items,
      (items: unknown[]) => items.length === 1,
      20_000,
      100,
    );
    expect(said[0]).toMatchObject({ actor: null, resource: { kind: 'webhook', id: hook.id } });
    const [failed] = (await h.get(`${hooks()}/${hook.id}/deliveries`, 'admin')).body.items as { id: string; state: string }[];
    expect(failed!.state).toBe('failed');
    expect(receivedFor(e.id)).toHaveLength(3);

    // Re-enabled, and the failed delivery sent again: the same webhook-id.
    expect((await h.request('PATCH', `${hooks()}/${hook.id}`, { enabled: true }, { role: 'admin' })).body).toMatchObject({
      enabled: true,
      disabled_reason: null,
    });
    const again = await h.post(`${hooks()}/${hook.id}/deliveries/${failed!.id}/redeliver`, undefined, 'admin');
    expect(again.status).toBe(202);
    const rs = await waitReceived(e.id, 4);
    expect(rs[3]!.headers['webhook-id']).toBe(failed!.id);
    expect(verifies(hook.secret, rs[3]!)).toBe(true);
    expect((await h.post(`${hooks()}/${hook.id}/deliveries/${crypto.randomUUID()}/redeliver`, undefined, 'admin')).body.code).toBe('delivery_not_found');
    await h.delete(hook.id);
  });

  it('signs with both secrets for a day after a rotation; the test event', async () => {
    const hook = await createHook(['*']);
    const rotated = await h.post(`${hooks()}/${hook.id}/rotate-secret`, undefined, 'admin');
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(hook.secret);
    const test = await h.post(`${hooks()}/${hook.id}/test`, undefined, 'admin');
    expect(test.status).toBe(202);
    const [r] = await waitReceived(test.body.event_id);
    expect(r!.json.type).toBe('webhook.test');
    expect(String(r!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifies(rotated.body.secret, r!)).toBe(true);
    expect(verifies(hook.secret, r!)).toBe(true);
    await h.delete(hook.id);
    // The audit log has the endpoint's changes, never a secret.
    const audit = await until(
      async () => (await h.get(`${h.base}?type=webhook.*&resource_id=${hook.id}`)).body.items as { type: string; actor: unknown }[],
      (items) => items.length === 3,
      20_000,
      100,
    );
    expect(audit.map((x) => x.type)).toEqual(['webhook.deleted', 'webhook.secret_rotated', 'webhook.created']);
    expect(audit[0]!.actor).toMatchObject({ email: 'admin@example.test' });
    expect(JSON.stringify(audit)).not.toMatch(/whsec_/);
  });

  it("refuses the URL guard's corpus, and bad input, naming the field; Developers and Viewers get 403", async () => {
    for (const { url: bad, why } of REFUSED_URLS) {
      const res = await h.post(hooks(), { url: bad, events: ['*'] }, 'admin');
      expect(res.status, bad).toBe(400);
      expect(res.body, bad).toMatchObject({ code: 'url_not_allowed', field: 'url' });
      expect(res.body.error, bad).toMatch(why);
    }
    for (const [body, field] of [
      [{ url, events: [] }, 'events'],
      [{ url, events: ['Service*'] }, 'events.0'],
      [{ events: ['*'] }, 'url'],
      [{ url, events: ['*'], secret: 'mine' }, undefined],
    ] as const) {
      const res = await h.post(hooks(), body, 'admin');
      expect(res.status, JSON.stringify(body)).toBe(400);
      if (field) expect(res.body.field).toBe(field);
    }
    for (const role of ['developer', 'viewer'] as const) {
      expect((await h.get(hooks(), role)).status).toBe(403);
      expect((await h.post(hooks(), { url, events: ['*'] }, role)).status).toBe(403);
    }
    expect((await h.get(`${hooks()}/${crypto.randomUUID()}`, 'admin')).body.code).toBe('webhook_not_found');
  });
});
