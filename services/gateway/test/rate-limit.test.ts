import type http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { addressKey, clientAddress, rateLimitHeaders, RateLimiter, tokenKey } from '../src/http/rate-limit.ts';
import { readConfig } from '../src/config.ts';

const limiters: RateLimiter[] = [];
const limiter = (perHour: number, burst: number, maxKeys?: number) => {
  const l = new RateLimiter({ perHour, burst }, maxKeys);
  limiters.push(l);
  return l;
};
afterEach(() => {
  for (const l of limiters.splice(0)) l.close();
});

describe('RateLimiter (GCRA)', () => {
  it('allows a burst, counts down, then refuses with the wait for the next request', () => {
    // 3600 an hour: one request a second, burst 3.
    const l = limiter(3600, 3);
    const t = 1_000_000;
    expect(l.take('a', t)).toEqual({ allowed: true, limit: 3, remaining: 2, reset: 1, retryAfter: 0 });
    expect(l.take('a', t)).toMatchObject({ allowed: true, remaining: 1, reset: 2 });
    expect(l.take('a', t)).toMatchObject({ allowed: true, remaining: 0, reset: 3 });
    expect(l.take('a', t)).toEqual({ allowed: false, limit: 3, remaining: 0, reset: 3, retryAfter: 1 });
    // A refused request is not charged: a second later exactly one is allowed again.
    expect(l.take('a', t + 1000)).toMatchObject({ allowed: true, remaining: 0 });
    expect(l.take('a', t + 1000)).toMatchObject({ allowed: false, retryAfter: 1 });
    // After the whole window the bucket is full.
    expect(l.take('a', t + 10_000)).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('keys are independent', () => {
    const l = limiter(3600, 2);
    l.take('a', 0);
    l.take('a', 0);
    expect(l.take('a', 0).allowed).toBe(false);
    expect(l.take('b', 0)).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('Retry-After rounds up to whole seconds, at least 1', () => {
    const l = limiter(60, 1); // one a minute
    l.take('a', 0);
    expect(l.take('a', 100)).toMatchObject({ allowed: false, retryAfter: 60, reset: 60 });
    expect(l.take('a', 59_500)).toMatchObject({ allowed: false, retryAfter: 1 });
  });

  it('refund gives the last request back, and forgets a bucket that is full again', () => {
    const l = limiter(3600, 3);
    l.take('a', 0);
    l.take('a', 0);
    l.refund('a', 0);
    expect(l.take('a', 0)).toMatchObject({ remaining: 1 });
    l.refund('a', 0);
    l.refund('a', 0);
    expect(l.has('a')).toBe(false);
    l.refund('nobody', 0);
    expect(l.size).toBe(0);
  });

  it('memory is bounded: full buckets are swept, and past the cap the least recently used key goes', () => {
    const l = limiter(3600, 5, 3);
    l.take('a', 0);
    l.take('b', 0);
    l.take('c', 0);
    l.take('a', 0); // a is now the most recently used
    l.take('d', 0);
    expect(l.size).toBe(3);
    expect(l.has('b')).toBe(false);
    expect(['a', 'c', 'd'].every((k) => l.has(k))).toBe(true);
    l.sweep(1500); // c and d (one request each) are full again; a (two) is not
    expect(l.has('a')).toBe(true);
    expect(l.size).toBe(1);
  });

  it('renders the IETF draft fields, Retry-After only when refused', () => {
    expect(rateLimitHeaders({ allowed: true, limit: 5, remaining: 4, reset: 1, retryAfter: 0 })).toEqual([
      ['RateLimit-Limit', '5'],
      ['RateLimit-Remaining', '4'],
      ['RateLimit-Reset', '1'],
    ]);
    expect(rateLimitHeaders({ allowed: false, limit: 5, remaining: 0, reset: 5, retryAfter: 1 })).toContainEqual(['Retry-After', '1']);
  });
});

describe('bucket keys', () => {
  it('a token is keyed by its hash, never kept as it is', () => {
    const token = `sk-${'ab'.repeat(32)}`;
    expect(tokenKey(token)).not.toContain(token);
    expect(tokenKey(token)).toBe(tokenKey(token));
    expect(tokenKey(token)).not.toBe(tokenKey(`${token.slice(0, -1)}c`));
  });

  it('IPv4 as it is, IPv6 by its /64', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:0DB8:0001:0002:ffff:1:2:3')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });

  it('X-Forwarded-For is believed only as far as the trusted proxies', () => {
    const req = (xff?: string) =>
      ({ socket: { remoteAddress: '10.0.0.2' }, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } }) as http.IncomingMessage;
    expect(clientAddress(req('198.51.100.1'), 0)).toBe('10.0.0.2');
    expect(clientAddress(req('6.6.6.6, 198.51.100.1'), 1)).toBe('198.51.100.1');
    expect(clientAddress(req('6.6.6.6, 198.51.100.1, 10.0.0.9'), 2)).toBe('198.51.100.1');
    expect(clientAddress(req('198.51.100.1'), 2)).toBe('198.51.100.1');
    expect(clientAddress(req(), 1)).toBe('10.0.0.2');
  });
});

describe('rate limit configuration', () => {
  const base = { PIER_AUTH_GRPC_URL: '127.0.0.1:7102', PIER_AUTH_URL: 'http://127.0.0.1:7101', PIER_GATEWAY_SERVICE_PRIVATE_KEY: '{}' };

  it('defaults: 5000/h burst 100 per token, 1000/h burst 60 per address, no trusted proxy', () => {
    expect(readConfig(base)).toMatchObject({
      PIER_RATE_LIMIT_TOKEN_PER_HOUR: 5000,
      PIER_RATE_LIMIT_TOKEN_BURST: 100,
      PIER_RATE_LIMIT_ADDRESS_PER_HOUR: 1000,
      PIER_RATE_LIMIT_ADDRESS_BURST: 60,
      PIER_TRUSTED_PROXY_HOPS: 0,
    });
    expect(readConfig({ ...base, PIER_RATE_LIMIT_TOKEN_PER_HOUR: '9000', PIER_TRUSTED_PROXY_HOPS: '1' })).toMatchObject({
      PIER_RATE_LIMIT_TOKEN_PER_HOUR: 9000,
      PIER_TRUSTED_PROXY_HOPS: 1,
    });
  });

  it.each([
    ['PIER_RATE_LIMIT_TOKEN_PER_HOUR', '0'],
    ['PIER_RATE_LIMIT_TOKEN_BURST', 'lots'],
    ['PIER_RATE_LIMIT_ADDRESS_PER_HOUR', '1.5'],
    ['PIER_RATE_LIMIT_ADDRESS_BURST', '-3'],
    ['PIER_TRUSTED_PROXY_HOPS', '11'],
    ['PIER_TRUSTED_PROXY_HOPS', 'x'],
  ])('%s=%s is refused with a message naming the variable', (name, value) => {
    expect(() => readConfig({ ...base, [name]: value })).toThrow(new RegExp(`${name}: ${name} must be`));
  });
});
