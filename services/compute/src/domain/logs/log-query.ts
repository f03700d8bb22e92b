// The rules of a logs query: how many lines, and the times `since`, `start` and `end` —
// an ISO 8601 time, or a duration back from now (`15m`, `2h`, `1h30m`, `7d`).
import { InputError } from '@pier/kit';

export const DEFAULT_LOG_LIMIT = 100;
export const MAX_LOG_LIMIT = 5000;
export const MAX_SEARCH_LENGTH = 200;
/** A Docker replica index or a Kubernetes pod name. */
export const REPLICA_PATTERN = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;

const DURATION = /^(?:\d{1,9}(?:ms|s|m|h|d))+$/;
const DURATION_PART = /(\d+)(ms|s|m|h|d)/g;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const ISO = /^\d{4}-\d\d-\d\d(?:T\d\d:\d\d(?::\d\d(?:\.\d{1,9})?)?(Z|[+-]\d\d:?\d\d)?)?$/i;

/** `value` as a time: ISO 8601 (UTC when it names no zone) or a duration before `now`. */
export function parseInstant(value: string, field: string, now: Date): Date {
  const v = value.trim();
  let at: Date | undefined;
  if (DURATION.test(v)) {
    let ms = 0;
    for (const [, n, unit] of v.matchAll(DURATION_PART)) ms += Number(n) * UNIT_MS[unit!]!;
    at = new Date(now.getTime() - ms);
  } else {
    const m = ISO.exec(v);
    // Date would roll 2025-02-30 over into March: the day must exist in its month.
    const [year, month, day] = v.slice(0, 10).split('-').map(Number) as [number, number, number];
    if (m && day <= new Date(Date.UTC(year, month, 0)).getUTCDate()) at = new Date(v.includes('T') && !m[1] ? `${v}Z` : v);
  }
  if (!at || Number.isNaN(at.getTime())) {
    throw new InputError(
      `${field}: must be an ISO 8601 time such as 2025-05-01T12:00:00Z, or a duration back from now such as 15m, 2h or 1h30m`,
      'invalid_request',
      {
        field,
      },
    );
  }
  return at;
}
