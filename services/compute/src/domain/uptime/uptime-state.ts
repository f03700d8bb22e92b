// The rules of an uptime monitor's state, without I/O: what counts as a successful check,
// when a service is down or up again, and which incident opens or closes.
import type { ProbeOutcome } from './uptime-probe-port.ts';
import type { MonitorSettings, MonitorState, UptimeMonitor, UptimeStatus } from './uptime-store-port.ts';

/** Failed checks in a row that make a service `down`: one lost packet is not an outage. */
export const DOWN_AFTER_FAILURES = 2;
/** Incidents kept per monitor, newest first; older ones are dropped as new ones open. */
export const INCIDENTS_KEPT = 20;

export interface CheckResult {
  ok: boolean;
  at: Date;
  statusCode: number | null;
  latencyMs: number | null;
  /** Why it failed, in the words an incident shows. */
  reason: string | null;
}

export const expectedRange = (m: MonitorSettings) => `${m.expected_min}-${m.expected_max}`;

/** A response is up when its status is in the expected range (a 3xx included by default: redirects are not followed). */
export function judge(outcome: ProbeOutcome, m: MonitorSettings, at: Date): CheckResult {
  if ('error' in outcome) return { ok: false, at, statusCode: null, latencyMs: null, reason: outcome.error };
  const ok = outcome.statusCode >= m.expected_min && outcome.statusCode <= m.expected_max;
  return {
    ok,
    at,
    statusCode: outcome.statusCode,
    latencyMs: outcome.latencyMs,
    reason: ok ? null : `status ${outcome.statusCode} outside the expected ${expectedRange(m)}`,
  };
}

export type Transition = { to: 'down'; from: UptimeStatus; incidentStartedAt: Date; reason: string } | { to: 'up'; from: UptimeStatus } | null;

/**
 * The monitor's state after one more check. `down` after DOWN_AFTER_FAILURES failures in a
 * row — its incident starts at the first of them, with the reason of the one that tipped
 * it; `up` at the first success.
 */
export function advance(m: UptimeMonitor, r: CheckResult): { state: MonitorState; transition: Transition } {
  const last = { last_checked_at: r.at, last_status_code: r.statusCode, last_latency_ms: r.latencyMs, last_error: r.reason };
  if (r.ok) {
    const changed = m.status !== 'up';
    return {
      state: { ...last, status: 'up', consecutive_failures: 0, failing_since: null, status_changed_at: changed ? r.at : m.status_changed_at },
      transition: changed ? { to: 'up', from: m.status } : null,
    };
  }
  const failures = m.consecutive_failures + 1;
  const failingSince = m.failing_since ?? r.at;
  const goesDown = failures >= DOWN_AFTER_FAILURES && m.status !== 'down';
  return {
    state: {
      ...last,
      status: goesDown ? 'down' : m.status,
      consecutive_failures: failures,
      failing_since: failingSince,
      status_changed_at: goesDown ? r.at : m.status_changed_at,
    },
    transition: goesDown ? { to: 'down', from: m.status, incidentStartedAt: failingSince, reason: r.reason ?? 'check failed' } : null,
  };
}

/** A share of successful checks as a percentage with three decimals; null without checks. */
export function percentage(counts: { checks: number; ok: number }): number | null {
  if (counts.checks === 0) return null;
  return Math.round((counts.ok / counts.checks) * 100_000) / 1000;
}
