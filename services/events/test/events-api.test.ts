import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDENTITY_HEADER } from '@pier/kit';
import { startServiceUnderTest } from '@pier/testing';
import { readConfig, start } from '../src/index.ts';
import { readEventStream, startEvents, until, type Harness, type OutboxPayload } from './support.ts';

// The events service against the suite's real PostgreSQL and NATS: events published on
// PIER_EVENTS as the outbox relays publish them are stored once, listed, filtered, paged and
// followed; a restart loses and repeats nothing.

let h: Harness;
beforeAll(async () => {
  h = await startEvents();
  await h.consumerReady();
}, 60_000);
afterAll(async () => {
  await h?.close();
});

const listed = async (query = '') => (await h.get(`${h.base}${query}`)).body as { items: { id: string; type: string }[]; next_cursor: string | null };
const waitFor = (ids: string[]) =>
  until(
    () => listed(`?limit=200`),
    (b) => ids.every((id) => b.items.some((e) => e.id === id)),
    20_000,
    100,
  );

describe('the audit log', () => {
  const published: OutboxPayload[] = [];
  const actor = randomUUID();
  const resource = randomUUID();

  beforeAll(async () => {
    // A second apart: two published in the same millisecond would share occurred_at, and
    // the since/until checks need each event alone at its time.
    let at = Date.now() - 60_000;
    const next = () => new Date((at += 1000)).toISOString();
    published.push(
      await h.publish({ kind: 'secret.created', resource_id: resource, resource: { kind: 'secret', id: resource, name: 's' }, occurred_at: next() }),
    );
    published.push(
      await h.publish({
        kind: 'service.created',
        actor: { user_id: actor, email: 'a@example.test', credential: { kind: 'oidc', id: null, name: null } },
        occurred_at: next(),
      }),
    );
    published.push(await h.publish({ kind: 'service.status_changed', actor: null, source_ip: null, vpc_id: randomUUID(), occurred_at: next() }));
    published.push(await h.publish({ kind: 'service.build.started', actor: null, source_ip: null, occurred_at: next() }));
    published.push(await h.publish({ kind: 'api_key.revoked', vpc_id: null, occurred_at: next() }));
    await waitFor(published.map((p) => p.id));
  }, 30_000);

  it('lists each event once, newest first, with its actor, address, resource and data', async () => {
    const body = await listed();
    expect(body.items.map((e) => e.id)).toEqual(published.map((p) => p.id).reverse());
    const revoked = body.items[0] as unknown as Record<string, unknown>;
    const p = published[4]!;
    expect(revoked).toEqual({
      id: p.id,
      type: 'api_key.revoked',
      occurred_at: p.occurred_at,
      workspace_id: h.workspaceId,
      vpc_id: null,
      resource: p.resource,
      actor: p.actor,
      source_ip: '203.0.113.7',
      data: p.data,
    });
    expect((body.items[1] as unknown as { actor: unknown }).actor).toBeNull();
  });

  it('pages with limit and cursor, like every list', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await listed(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((e) => e.id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual(published.map((p) => p.id).reverse());
  });

  it('filters by type (exact or prefix), resource, VPC, actor and time', async () => {
    const ids = async (q: string) => (await listed(q)).items.map((e) => e.id);
    expect(await ids('?type=service.*')).toEqual([published[3]!.id, published[2]!.id, published[1]!.id]);
    expect(await ids('?type=service.created')).toEqual([published[1]!.id]);
    expect(await ids('?type=service.build.*')).toEqual([published[3]!.id]);
    expect(await ids(`?resource_id=${resource}`)).toEqual([published[0]!.id]);
    expect(await ids(`?vpc_id=${published[2]!.vpc_id}`)).toEqual([published[2]!.id]);
    expect(await ids(`?actor=${actor}`)).toEqual([published[1]!.id]);
    expect(await ids(`?since=${encodeURIComponent(published[4]!.occurred_at)}`)).toEqual([published[4]!.id]);
    expect(await ids(`?until=${encodeURIComponent(published[1]!.occurred_at)}`)).toEqual([published[0]!.id]);
    // Another workspace sees none of them.
    const other = await h.request('GET', `/api/v1/workspaces/${randomUUID()}/events`, undefined, { scope: { workspaceId: randomUUID(), vpcId: h.vpcId } });
    expect(other.status).toBe(403);
  });

  it('answers a bad filter with a 400 naming the field', async () => {
    for (const [q, field] of [
      ['type=service*', 'type'],
      ['vpc_id=nope', 'vpc_id'],
      ['actor=nope', 'actor'],
      ['since=yesterday', 'since'],
      ['limit=500', 'limit'],
      ['follow=maybe', 'follow'],
    ]) {
      const r = await h.get(`${h.base}?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body).toMatchObject({ code: 'invalid_request', field });
      expect(typeof r.body.error).toBe('string');
    }
    const cursor = await h.get(`${h.base}?cursor=garbage`);
    expect(cursor.status).toBe(400);
    expect(cursor.body.code).toBe('invalid_cursor');
  });

  it('is for Admins and Owners only', async () => {
    for (const role of ['developer', 'viewer'] as const) expect((await h.get(h.base, role)).status).toBe(403);
    expect((await h.get(h.base, 'admin')).status).toBe(200);
  });
});

describe('following', () => {
  const follow = async (lastEventId?: string, query = '') => {
    const abort = new AbortController();
    const res = await fetch(`${h.url}${h.base}?follow=true${query}`, {
      headers: { [IDENTITY_HEADER]: await h.token('admin'), ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    return { res, abort };
  };

  it('streams new events with their ids, and resumes after Last-Event-ID with no gap and no duplicate', async () => {
    const first = await follow();
    // The follower has started (its first read) before anything is published.
    await new Promise((r) => setTimeout(r, 300));
    const a = await h.publish({ kind: 'database.created' });
    const b = await h.publish({ kind: 'database.updated' });
    const read = await readEventStream(first.res, (r) => r.events.length >= 2);
    first.abort.abort();
    expect(read.events.map((e) => e.id)).toEqual([a.id, b.id]);
    expect(read.events[0]!.event).toBe('event');
    expect(read.events[0]!.data).toMatchObject({ id: a.id, type: 'database.created', actor: a.actor, source_ip: a.source_ip });

    // While nobody follows, three more; a client resuming after `a` gets b and them, once each.
    const more = [await h.publish({ kind: 'database.deleted' }), await h.publish({ kind: 'secret.deleted' }), await h.publish({ kind: 'vpc.created' })];
    await waitFor(more.map((p) => p.id));
    const again = await follow(a.id);
    const resumed = await readEventStream(again.res, (r) => r.events.length >= 4);
    await new Promise((r) => setTimeout(r, 300));
    again.abort.abort();
    expect(resumed.events.map((e) => e.id)).toEqual([b.id, ...more.map((p) => p.id)]);

    // Filters apply to the stream too.
    const typed = await follow(a.id, '&type=database.*');
    const only = await readEventStream(typed.res, (r) => r.events.length >= 2);
    typed.abort.abort();
    expect(only.events.map((e) => e.id)).toEqual([b.id, more[0]!.id]);
  }, 40_000);
});

describe('two instances', () => {
  it('one consumes; a follower of the other hears of each event (LISTEN/NOTIFY), not from its poll', async () => {
    const second = await startServiceUnderTest({
      schema: 'events',
      db: h.db,
      keys: h.keys,
      start: (e, logs) => start(readConfig(e), { logDestination: logs }),
      // A poll far longer than the wait below: only a notification can wake it in time.
      env: { ...h.env, PIER_EVENTS_FOLLOW_POLL_MS: '60000' },
    });
    try {
      const abort = new AbortController();
      const res = await fetch(`${second.url}${h.base}?follow=true`, { headers: { [IDENTITY_HEADER]: await h.token('admin') }, signal: abort.signal });
      await new Promise((r) => setTimeout(r, 300));
      const e = await h.publish({ kind: 'service.woken' });
      const read = await readEventStream(res, (r) => r.events.length >= 1, 10_000);
      abort.abort();
      expect(read.events.map((x) => x.id)).toEqual([e.id]);
    } finally {
      await second.running.stop();
    }
  }, 40_000);
});

describe('a restart', () => {
  it('stores what was published while it was down, and a redelivered or republished event once', async () => {
    const before = await h.publish({ kind: 'service.deleted' });
    await waitFor([before.id]);
    await h.running.stop();
    const whileDown = [await h.publish({ kind: 'service.created' }), await h.publish({ kind: 'service.updated' })];
    // The same event again under another message id (a relay's retry after the dedupe window).
    await h.publish(whileDown[0], `again:${whileDown[0]!.id}`);
    await h.restart();
    const after = await h.publish({ kind: 'service.woken' });
    await waitFor([...whileDown, after].map((p) => p.id));
    const all = (await listed('?limit=200')).items.map((e) => e.id);
    expect(new Set(all).size).toBe(all.length);
    for (const p of [before, ...whileDown, after]) expect(all.filter((id) => id === p.id)).toHaveLength(1);
  }, 60_000);

  it('deletes events past the retention', async () => {
    const old = await h.publish({ kind: 'member.added', occurred_at: new Date(Date.now() - 91 * 86_400_000).toISOString() });
    await waitFor([old.id]);
    expect(await h.running.trim()).toBeGreaterThanOrEqual(1);
    expect((await listed('?limit=200')).items.some((e) => e.id === old.id)).toBe(false);
  });
});
