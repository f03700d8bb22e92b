// Uptime monitoring's rules without I/O: the settings a POST takes (defaults, the path's
// limits, the operator's interval floor), what a check's outcome counts as, when a service
// is down or up again, and the percentages.
import { describe, expect, it } from 'vitest';
import { InputError } from '@pier/kit';
import { monitorSettings, type EnableUptimeInput } from '../src/domain/uptime/uptime-input.ts';
import { advance, judge, percentage, DOWN_AFTER_FAILURES } from '../src/domain/uptime/uptime-state.ts';
import type { UptimeMonitor } from '../src/domain/uptime/uptime-store-port.ts';

const fieldOf = (input: EnableUptimeInput, min = 30) => {
  try {
    monitorSettings(input, min);
  } catch (err) {
    if (err instanceof InputError) return (err.details as { field?: string }).field;
    throw err;
  }
  return undefined;
};

describe('uptime monitor settings', () => {
  it('fills the defaults: /, every 60 s, 10 s timeout, 200-399', () => {
    expect(monitorSettings({}, 30)).toEqual({ path: '/', interval_seconds: 60, timeout_ms: 10_000, expected_min: 200, expected_max: 399 });
  });

  it('takes every field, the timeout to the millisecond', () => {
    expect(monitorSettings({ path: '/healthz?deep=1', interval_seconds: 3600, timeout_seconds: 2.5, expected_status: { min: 200, max: 204 } }, 30)).toEqual({
      path: '/healthz?deep=1',
      interval_seconds: 3600,
      timeout_ms: 2500,
      expected_min: 200,
      expected_max: 204,
    });
  });

  it('keeps the default timeout shorter than a short interval (allowed by a lower floor)', () => {
    expect(monitorSettings({ interval_seconds: 1 }, 1).timeout_ms).toBe(500);
    expect(monitorSettings({ interval_seconds: 12 }, 1).timeout_ms).toBe(6000);
    expect(monitorSettings({ interval_seconds: 30 }, 30).timeout_ms).toBe(10_000);
  });

  it('refuses a path that could leave the service or split the request, naming `path`', () => {
    for (const path of [
      'healthz',
      '//evil.example/x',
      '/a//b',
      '/user@evil.example',
      '/a\r\nHost: x',
      '/a\nb',
      '/a\\b',
      '/a#frag',
      '/a b',
      '/é',
      '/' + 'a'.repeat(2000),
    ]) {
      expect(fieldOf({ path }), path).toBe('path');
    }
    expect(fieldOf({ path: '/' + 'a'.repeat(1999) })).toBeUndefined();
    expect(fieldOf({ path: '/api/v1/health?x=%20y&z=1' })).toBeUndefined();
  });

  it("holds the interval between the operator's floor (30 s by default) and an hour", () => {
    expect(fieldOf({ interval_seconds: 29 })).toBe('interval_seconds');
    expect(fieldOf({ interval_seconds: 30 })).toBeUndefined();
    expect(fieldOf({ interval_seconds: 3601 })).toBe('interval_seconds');
    expect(fieldOf({ interval_seconds: 1 }, 1)).toBeUndefined();
    expect(fieldOf({ interval_seconds: 0 }, 1)).toBe('interval_seconds');
  });

  it('wants a timeout shorter than the interval, 0.1-60 s, in whole milliseconds', () => {
    expect(fieldOf({ interval_seconds: 30, timeout_seconds: 30 })).toBe('timeout_seconds');
    expect(fieldOf({ interval_seconds: 30, timeout_seconds: 29.999 })).toBeUndefined();
    expect(fieldOf({ interval_seconds: 120, timeout_seconds: 61 })).toBe('timeout_seconds');
    expect(fieldOf({ timeout_seconds: 0.05 })).toBe('timeout_seconds');
    expect(fieldOf({ timeout_seconds: 1.0005 })).toBe('timeout_seconds');
  });

  it('wants expected_status to be a range of status codes', () => {
    expect(fieldOf({ expected_status: { min: 300, max: 200 } })).toBe('expected_status');
    expect(fieldOf({ expected_status: { min: 99, max: 200 } })).toBe('expected_status');
    expect(fieldOf({ expected_status: { min: 200, max: 600 } })).toBe('expected_status');
    expect(fieldOf({ expected_status: { min: 204, max: 204 } })).toBeUndefined();
  });
});

const t = (s: number) => new Date(Date.UTC(2025, 0, 1, 12, 0, s));
const settings = { path: '/', interval_seconds: 30, timeout_ms: 10_000, expected_min: 200, expected_max: 399 };
const fresh: UptimeMonitor = {
  ...settings,
  service_id: 's',
  generation: 1,
  status: 'unknown',
  consecutive_failures: 0,
  failing_since: null,
  last_checked_at: null,
  last_status_code: null,
  last_latency_ms: null,
  last_error: null,
  status_changed_at: null,
  next_check_at: t(0),
  created_at: t(0),
  updated_at: t(0),
};

describe('uptime checks and state', () => {
  it('counts a response in the expected range as up, a 3xx included; anything else says why not', () => {
    expect(judge({ statusCode: 302, latencyMs: 4 }, settings, t(0))).toMatchObject({ ok: true, statusCode: 302, latencyMs: 4, reason: null });
    expect(judge({ statusCode: 503, latencyMs: 4 }, settings, t(0))).toMatchObject({
      ok: false,
      statusCode: 503,
      reason: 'status 503 outside the expected 200-399',
    });
    expect(judge({ statusCode: 302, latencyMs: 4 }, { ...settings, expected_max: 299 }, t(0)).ok).toBe(false);
    expect(judge({ error: 'connection refused', latencyMs: 1 }, settings, t(0))).toMatchObject({
      ok: false,
      statusCode: null,
      latencyMs: null,
      reason: 'connection refused',
    });
  });

  it(`is down after ${DOWN_AFTER_FAILURES} failures in a row, from the first of them; up at the first success`, () => {
    const up = advance(fresh, judge({ statusCode: 200, latencyMs: 3 }, settings, t(0)));
    expect(up.transition).toEqual({ to: 'up', from: 'unknown' });
    const m1 = { ...fresh, ...up.state };
    expect(advance(m1, judge({ statusCode: 200, latencyMs: 3 }, settings, t(30))).transition).toBeNull();

    const f1 = advance(m1, judge({ error: 'timed out after 10 s', latencyMs: 10_000 }, settings, t(30)));
    expect(f1.transition).toBeNull();
    expect(f1.state).toMatchObject({ status: 'up', consecutive_failures: 1, failing_since: t(30), last_error: 'timed out after 10 s' });
    const f2 = advance({ ...m1, ...f1.state }, judge({ statusCode: 502, latencyMs: 2 }, settings, t(60)));
    expect(f2.transition).toEqual({ to: 'down', from: 'up', incidentStartedAt: t(30), reason: 'status 502 outside the expected 200-399' });
    expect(f2.state).toMatchObject({ status: 'down', consecutive_failures: 2, status_changed_at: t(60) });
    const f3 = advance({ ...m1, ...f2.state }, judge({ error: 'connection refused', latencyMs: 1 }, settings, t(90)));
    expect(f3.transition).toBeNull();

    const back = advance({ ...m1, ...f3.state }, judge({ statusCode: 200, latencyMs: 3 }, settings, t(120)));
    expect(back.transition).toEqual({ to: 'up', from: 'down' });
    expect(back.state).toMatchObject({ status: 'up', consecutive_failures: 0, failing_since: null, last_error: null, last_status_code: 200 });
  });

  it('one failure between successes is no incident', () => {
    const m = { ...fresh, status: 'up' as const };
    const f = advance(m, judge({ error: 'connection reset', latencyMs: 1 }, settings, t(0)));
    const ok = advance({ ...m, ...f.state }, judge({ statusCode: 200, latencyMs: 3 }, settings, t(30)));
    expect([f.transition, ok.transition]).toEqual([null, null]);
  });

  it('gives percentages with three decimals, null without checks', () => {
    expect(percentage({ checks: 0, ok: 0 })).toBeNull();
    expect(percentage({ checks: 2880, ok: 2880 })).toBe(100);
    expect(percentage({ checks: 3, ok: 2 })).toBe(66.667);
  });
});
