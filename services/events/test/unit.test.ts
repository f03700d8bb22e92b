import { describe, expect, it } from 'vitest';
import { scrubEventData } from '@pier/kit';
import { eventsQuery, filtersOf } from '../src/domain/filters.ts';
import { eventOfMessage } from '../src/consumer/normalize.ts';

describe('the events query', () => {
  const parse = (q: Record<string, unknown>) => eventsQuery.safeParse(q);

  it('takes an exact type or a prefix ending in .*', () => {
    expect(filtersOf(eventsQuery.parse({ type: 'api_key.revoked' })).type).toEqual({ exact: 'api_key.revoked' });
    expect(filtersOf(eventsQuery.parse({ type: 'service.*' })).type).toEqual({ prefix: 'service.' });
    expect(filtersOf(eventsQuery.parse({ type: 'service.build.*' })).type).toEqual({ prefix: 'service.build.' });
  });

  it('refuses bad filters, naming the field', () => {
    for (const [field, value] of [
      ['type', 'service*'],
      ['type', '*'],
      ['type', 'Service.Created'],
      ['type', 'service.%'],
      ['vpc_id', 'not-a-uuid'],
      ['actor', '12'],
      ['since', 'yesterday'],
      ['until', '2026-13-45'],
      ['follow', 'maybe'],
      ['limit', '0'],
    ] as const) {
      const r = parse({ [field]: value });
      expect(r.success, `${field}=${value}`).toBe(false);
      expect(r.error!.issues[0]!.path).toEqual([field]);
    }
  });

  it('reads instants and lower-cases ids', () => {
    const f = filtersOf(eventsQuery.parse({ since: '2026-01-01', until: '2026-01-02T03:04:05Z', actor: 'AAAAAAAA-0000-4000-8000-000000000000' }));
    expect(f.since!.toISOString()).toBe('2026-01-01T00:00:00.000Z');
    expect(f.until!.toISOString()).toBe('2026-01-02T03:04:05.000Z');
    expect(f.actor).toBe('aaaaaaaa-0000-4000-8000-000000000000');
  });
});

describe('a message as an event', () => {
  it('keeps the id the outbox gave it, and the actor, resource and address', () => {
    const e = eventOfMessage(
      JSON.stringify({
        id: 'AAAAAAAA-0000-4000-8000-000000000001',
        kind: 'api_key.revoked',
        workspace_id: 'w',
        vpc_id: null,
        resource_id: 'k',
        resource: { kind: 'api_key', id: 'k', name: 'ci' },
        actor: { user_id: 'u', email: 'a@b', credential: { kind: 'cli_session', id: 's', name: 'laptop' } },
        source_ip: '198.51.100.2',
        data: { name: 'ci' },
        occurred_at: '2026-01-01T00:00:00.000Z',
      }),
      7,
      'auth:1:2',
    )!;
    expect(e.id).toBe('aaaaaaaa-0000-4000-8000-000000000001');
    expect(e.actor).toEqual({ user_id: 'u', email: 'a@b', credential: { kind: 'cli_session', id: 's', name: 'laptop' } });
    expect(e.resource).toEqual({ kind: 'api_key', id: 'k', name: 'ci' });
    expect(e.sourceIp).toBe('198.51.100.2');
    expect(e.streamSeq).toBe(7);
  });

  it('gives an event from before ids the same id on every delivery', () => {
    const old = JSON.stringify({
      kind: 'service.created',
      workspace_id: 'w',
      vpc_id: 'v',
      resource_id: 'r',
      data: { name: 'web' },
      occurred_at: new Date().toISOString(),
    });
    const a = eventOfMessage(old, 1, 'compute:5:9')!;
    const b = eventOfMessage(old, 2, 'compute:5:9')!;
    expect(a.id).toBe(b.id);
    expect(a.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a.resource).toEqual({ kind: 'service', id: 'r', name: 'web' });
    expect(a.actor).toBeNull();
  });

  it('drops what is not an event', () => {
    expect(eventOfMessage('not json', 1, undefined)).toBeNull();
    expect(eventOfMessage('{"data":{}}', 1, undefined)).toBeNull();
  });
});

describe("the outbox's scrub of event data", () => {
  it('removes secret-named keys and redacts URL passwords and token shapes', () => {
    const out = scrubEventData({
      name: 'x',
      values: { A: 'plain' },
      nested: [{ password: 'p', ok: 1 }],
      args: ['--token', 'abc'],
      error: 'clone of https://bob:s3cret@git.example/r.git failed with sk-' + 'a'.repeat(64),
      image: 'repo@sha256:' + 'b'.repeat(64),
    });
    expect(out).toEqual({
      name: 'x',
      nested: [{ ok: 1 }],
      error: 'clone of https://[redacted]@git.example/r.git failed with [redacted]',
      image: 'repo@sha256:' + 'b'.repeat(64),
    });
  });
});
