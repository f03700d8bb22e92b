// The gateway takes no epoch tick's numbers as they stand (answer-cache.ts, tickLeaseEnd):
// whatever can publish on the epoch subject could otherwise keep cached answers alive —
// past a revocation — for as long as it likes.
import { describe, expect, it } from 'vitest';
import { AUTH_CACHE_LEASE_MS } from '@pier/kit';
import { tickLeaseEnd } from '../src/answer-cache.ts';

const HOUR = 3_600_000;
const now = Date.parse('2026-11-27T18:00:00Z');

describe('the lease an epoch tick buys', () => {
  it("is auth's own lease from the tick's read instant, for an honest tick", () => {
    expect(tickLeaseEnd({ at: now - 3, lease: AUTH_CACHE_LEASE_MS }, now, AUTH_CACHE_LEASE_MS)).toBe(now - 3 + AUTH_CACHE_LEASE_MS);
  });

  it('is clamped to the configured maximum: a forged tick with a 1-hour lease buys 500 ms', () => {
    expect(tickLeaseEnd({ at: now, lease: HOUR }, now, AUTH_CACHE_LEASE_MS) - now).toBe(500);
    expect(tickLeaseEnd({ at: now, lease: HOUR }, now, 2000) - now).toBe(2000);
  });

  it("runs from the gateway's receipt, not from a sender's timestamp in the future", () => {
    expect(tickLeaseEnd({ at: now + HOUR, lease: HOUR }, now, AUTH_CACHE_LEASE_MS) - now).toBe(500);
  });

  it('gives nothing for a negative lease, and an old tick only what is left of its lease', () => {
    expect(tickLeaseEnd({ at: now, lease: -HOUR }, now, AUTH_CACHE_LEASE_MS)).toBe(now);
    expect(tickLeaseEnd({ at: now - 400, lease: 500 }, now, AUTH_CACHE_LEASE_MS) - now).toBe(100);
  });
});
