import { createHash } from 'node:crypto';
import type http from 'node:http';

/** A bucket's refill rate and size. */
export interface RatePolicy {
  perHour: number;
  burst: number;
}

/** What one request's charge left: the values of the RateLimit-* fields. */
export interface RateDecision {
  allowed: boolean;
  /** The bucket's size (the burst). */
  limit: number;
  /** Whole requests left in the bucket after this one. */
  remaining: number;
  /** Seconds until the bucket is full again (0 when it is). */
  reset: number;
  /** Seconds until one more request is allowed; 0 when this one was. */
  retryAfter: number;
}

/** Keys a limiter holds at most: each entry is a short string and a number, ~100-150 bytes. */
export const MAX_KEYS = 100_000;
const SWEEP_MS = 60_000;

/**
 * Token buckets as GCRA: per key one number, the "theoretical arrival time" (ms) at which
 * the bucket would be full again. A request is allowed when, after adding one emission
 * interval, that time is at most `burst` intervals ahead of now. O(1) per request and no
 * object per key. A key whose time has passed is a full bucket, which is the same as no
 * entry at all: those are swept every minute, and past MAX_KEYS the least recently used
 * key is dropped (its client starts again with a full bucket), so a flood of distinct
 * addresses costs bounded memory.
 */
export class RateLimiter {
  private readonly tats = new Map<string, number>();
  private readonly interval: number;
  private readonly window: number;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    readonly policy: RatePolicy,
    private readonly maxKeys = MAX_KEYS,
  ) {
    this.interval = 3_600_000 / policy.perHour;
    this.window = this.interval * policy.burst;
    this.sweeper = setInterval(() => this.sweep(Date.now()), SWEEP_MS);
    this.sweeper.unref();
  }

  get size(): number {
    return this.tats.size;
  }

  has(key: string): boolean {
    return this.tats.has(key);
  }

  /** Charges one request to `key`; a refused request is not charged. */
  take(key: string, now = Date.now()): RateDecision {
    const stored = this.tats.get(key);
    const tat = stored === undefined || stored < now ? now : stored;
    const next = tat + this.interval;
    if (next - now > this.window) return this.decision(false, tat, now, next - this.window - now);
    // Delete first so the Map's order stays least recently used first.
    if (stored !== undefined) this.tats.delete(key);
    else if (this.tats.size >= this.maxKeys) this.tats.delete(this.tats.keys().next().value!);
    this.tats.set(key, next);
    return this.decision(true, next, now, 0);
  }

  /** Gives back the request last charged to `key` (it turned out to belong elsewhere). */
  refund(key: string, now = Date.now()): void {
    const tat = this.tats.get(key);
    if (tat === undefined) return;
    if (tat - this.interval <= now) this.tats.delete(key);
    else this.tats.set(key, tat - this.interval);
  }

  /** Drops every full bucket. */
  sweep(now: number): void {
    for (const [key, tat] of this.tats) if (tat <= now) this.tats.delete(key);
  }

  close(): void {
    clearInterval(this.sweeper);
  }

  private decision(allowed: boolean, tat: number, now: number, waitMs: number): RateDecision {
    const ahead = tat - now;
    return {
      allowed,
      limit: this.policy.burst,
      remaining: Math.floor((this.window - ahead) / this.interval + 1e-9),
      reset: Math.ceil(ahead / 1000),
      retryAfter: allowed ? 0 : Math.max(1, Math.ceil(waitMs / 1000)),
    };
  }
}

/** The header fields of a decision, as the IETF draft (httpapi-ratelimit-headers, -06) names them. */
export function rateLimitHeaders(d: RateDecision): [string, string][] {
  const fields: [string, string][] = [
    ['RateLimit-Limit', String(d.limit)],
    ['RateLimit-Remaining', String(d.remaining)],
    ['RateLimit-Reset', String(d.reset)],
  ];
  if (!d.allowed) fields.push(['Retry-After', String(d.retryAfter)]);
  return fields;
}

export function setRateLimitHeaders(res: http.ServerResponse, d: RateDecision): void {
  for (const [name, value] of rateLimitHeaders(d)) res.setHeader(name, value);
}

/**
 * The key of a bearer token's bucket: a hash, so no token sits in the gateway's memory
 * longer than its request (a heap dump shows no credentials).
 */
export function tokenKey(token: string): string {
  return createHash('sha256').update(token).digest('base64');
}

/**
 * The key of a source address's bucket. IPv4 (also IPv4-mapped IPv6) as it is; IPv6 by its
 * /64, since one host is routinely given a whole /64 and could otherwise pick a fresh
 * address, and a fresh bucket, per request.
 */
export function addressKey(address: string): string {
  if (address.indexOf(':') === -1) return address;
  const lower = address.toLowerCase();
  if (lower.startsWith('::ffff:') && lower.indexOf('.') !== -1) return lower.slice(7);
  const zone = lower.indexOf('%');
  const bare = zone === -1 ? lower : lower.slice(0, zone);
  const gap = bare.indexOf('::');
  let groups: string[];
  if (gap === -1) groups = bare.split(':');
  else {
    const head = gap === 0 ? [] : bare.slice(0, gap).split(':');
    const tail = gap + 2 === bare.length ? [] : bare.slice(gap + 2).split(':');
    groups = [...head, ...Array<string>(Math.max(0, 8 - head.length - tail.length)).fill('0'), ...tail];
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/**
 * The client's address: the socket's peer, or with `trustedHops` reverse proxies in front
 * of the gateway, the address the outermost of them saw — the `trustedHops`-th entry of
 * X-Forwarded-For from the right (entries further left are whatever the client sent).
 */
export function clientAddress(req: http.IncomingMessage, trustedHops: number): string {
  const peer = req.socket.remoteAddress ?? '';
  if (trustedHops === 0) return peer;
  const header = req.headers['x-forwarded-for'];
  if (typeof header !== 'string' || header === '') return peer;
  const entries = header.split(',');
  const entry = entries[Math.max(0, entries.length - trustedHops)]!.trim();
  return entry === '' ? peer : entry;
}
