import type http from 'node:http';
import {
  errorBody,
  httpStatusOf,
  IDEMPOTENCY_KEY_HEADER,
  idempotencyKeyOf,
  idempotencyKeyReused,
  idempotencyScope,
  loggablePath,
  NotFoundError,
  PierError,
} from '@pier/kit';
import type { Authenticates } from '../answer-cache.ts';
import type { Authenticated } from '../auth-client.ts';
import type { KeyClaims } from '../idempotency-owners.ts';
import type { RouteTarget, Upstream } from '../routing.ts';
import type { UpstreamProxy } from './proxy.ts';
import { missingToken } from './authenticate.ts';
import { addressKey, clientAddress, tokenKey, type RateDecision, type RateLimiter } from './rate-limit.ts';

// The one pipeline every proxied request goes through, a plain request (app.ts's handle)
// and a WebSocket handshake (app.ts's upgrade) alike: rate limit -> authenticate -> route
// -> the Idempotency-Key's owner (a key first sent to another service is refused).
// It decides; each path answers in its own medium (a ServerResponse, a raw socket).

/** Buckets per bearer token and, for requests without a token that auth accepted, per source address. */
export interface RateLimits {
  tokens: RateLimiter;
  addresses: RateLimiter;
  /** Reverse proxies in front of the gateway whose X-Forwarded-For entries are trusted. */
  trustedHops: number;
}

export type Bucket = 'token' | 'address';

/** Let in: where it goes, as whom, and the charge whose RateLimit-* fields go on its answer. */
export interface Admitted {
  admitted: true;
  proxy: UpstreamProxy;
  /** The identity auth signed for this request: the only credential that goes upstream. */
  identity: string;
  limits: RateDecision;
}

/**
 * Turned away: by a bucket (429, `rateLimited` names it) or with an error (`error`, as
 * thrown: auth's answer, a missing token, a service not deployed). `limits` is the last
 * charge made; its RateLimit-* fields go on the refusal too.
 */
export type Refusal = { admitted: false; limits: RateDecision } & ({ rateLimited: Bucket; error?: never } | { error: unknown; rateLimited?: never });

export type Admission = Admitted | Refusal;

/** Decides one request to `target`, sent with `token` (null or '' when it has none). */
export type Admit = (req: http.IncomingMessage, target: RouteTarget, token: string | null) => Promise<Admission>;

export function admission(auth: Authenticates, limits: RateLimits, proxies: ReadonlyMap<Upstream, UpstreamProxy>, claims?: KeyClaims): Admit {
  return async (req, target, token) => {
    const address = addressKey(clientAddress(req, limits.trustedHops));
    if (!token) {
      const decision = limits.addresses.take(address);
      return decision.allowed ? { admitted: false, limits: decision, error: missingToken() } : { admitted: false, limits: decision, rateLimited: 'address' };
    }
    const charge = chargeFirst(limits, token, address);
    let decision = charge.decision;
    if (!decision.allowed) return { admitted: false, limits: decision, rateLimited: charge.known ? 'token' : 'address' };
    let answer: Authenticated;
    try {
      answer = await auth.authenticate(token, target.workspaceId, target.vpcId);
    } catch (error) {
      return { admitted: false, limits: decision, error };
    }
    if (!charge.known) {
      decision = moveToToken(limits, charge.key, address);
      if (!decision.allowed) return { admitted: false, limits: decision, rateLimited: 'token' };
    }
    const proxy = proxies.get(target.upstream);
    if (!proxy) {
      const path = loggablePath(req.url ?? '/');
      return {
        admitted: false,
        limits: decision,
        error: new NotFoundError(`no route for ${req.method} ${path}: the ${target.upstream} service is not deployed`, 'route_not_found'),
      };
    }
    if (claims && (await keyTakenElsewhere(claims, req, target, answer))) {
      return { admitted: false, limits: decision, error: idempotencyKeyReused() };
    }
    return { admitted: true, proxy, identity: answer.identity_token, limits: decision };
  };
}

/** The request's key; undefined without one, and for a malformed one, which is the service's to refuse (400), as without a gateway. */
function wellFormedKey(header: string | string[] | undefined): string | undefined {
  try {
    return typeof header === 'string' ? idempotencyKeyOf(header) : undefined;
  } catch {
    return undefined;
  }
}

/** A write whose Idempotency-Key went first to another service (idempotency-owners.ts). */
async function keyTakenElsewhere(claims: KeyClaims, req: http.IncomingMessage, target: RouteTarget, answer: Authenticated): Promise<boolean> {
  const key = req.method === 'GET' || req.method === 'HEAD' ? undefined : wellFormedKey(req.headers[IDEMPOTENCY_KEY_HEADER]);
  if (key === undefined) return false;
  // The scope the services key by, so a key is the same key here and there.
  const scope = idempotencyScope(target.workspaceId, answer.user_id);
  return (await claims.claim(answer.installation, scope, key, target.upstream)) === 'other-service';
}

/** The status and JSON body of a refusal; an error that is not a PierError is a 500 `internal`. */
export function refusalAnswer(r: Refusal): { status: number; body: Record<string, unknown> } {
  if (r.rateLimited) return { status: 429, body: rateLimitedBody(r.limits, r.rateLimited) };
  const known = asPierError(r.error);
  return { status: httpStatusOf[known.kind], body: errorBody(known) };
}

export function asPierError(err: unknown): PierError {
  return err instanceof PierError ? err : new PierError('internal', 'internal error', 'internal');
}

const WHOSE: Record<Bucket, string> = { token: 'this token', address: 'this address (requests without a valid token)' };

export function rateLimitedBody(d: RateDecision, bucket: Bucket): Record<string, unknown> {
  return { error: `rate limit exceeded for ${WHOSE[bucket]}: retry in ${d.retryAfter} s`, code: 'rate_limited' };
}

/**
 * The charge made before auth answers. A token the gateway has already seen accepted has
 * its own bucket and pays from it. Any other token pays from its source address's bucket:
 * were every unknown token given a fresh bucket, guessing tokens would be unlimited.
 */
function chargeFirst(limits: RateLimits, token: string, address: string): { key: string; known: boolean; decision: RateDecision } {
  const key = tokenKey(token);
  const known = limits.tokens.has(key);
  return { key, known, decision: known ? limits.tokens.take(key) : limits.addresses.take(address) };
}

/** Auth accepted a token that had no bucket: its request moves from the address's bucket to the token's. */
function moveToToken(limits: RateLimits, key: string, address: string): RateDecision {
  limits.addresses.refund(address);
  return limits.tokens.take(key);
}
