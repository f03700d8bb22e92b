import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import {
  accessLogLevel,
  errorBody,
  httpStatusOf,
  IDENTITY_HEADER,
  loggablePath,
  NotFoundError,
  PierError,
  REQUEST_ID_HEADER,
  writeSocketError,
  type Logger,
} from '@pier/kit';
import type { Authenticates } from './answer-cache.ts';
import { routeOf, type RouteTarget, type Upstream } from './routing.ts';
import { bearerToken, missingToken } from './http/authenticate.ts';
import { createUpstreamProxy, UPGRADE_DONE, type UpgradeRequest, type UpstreamProxy } from './http/proxy.ts';
import { OPENAPI_PATH } from './http/openapi.ts';
import type { GatewayMetrics } from './http/metrics.ts';
import { takeAccessToken } from './http/access-token.ts';
import { createFallbackApp } from './http/fallback-app.ts';
import { addressKey, clientAddress, rateLimitHeaders, setRateLimitHeaders, tokenKey, type RateDecision, type RateLimiter } from './http/rate-limit.ts';

export interface GatewayDeps {
  logger: Logger;
  /** Auth's answers: the gRPC client, or the cache in front of it. */
  auth: Authenticates;
  /** Base URL of each routed service; a service that is absent is not routed. */
  upstreams: Map<Upstream, string>;
  limits: RateLimits;
  /** Longest silence from a service before the gateway gives up (504, or the response cut). */
  upstreamTimeoutMs: number;
  metrics?: GatewayMetrics;
}

/** Buckets per bearer token and, for requests without a token that auth accepted, per source address. */
export interface RateLimits {
  tokens: RateLimiter;
  addresses: RateLimiter;
  /** Reverse proxies in front of the gateway whose X-Forwarded-For entries are trusted. */
  trustedHops: number;
}

export interface Gateway {
  /** The http server's 'request' listener. */
  handle(req: http.IncomingMessage, res: http.ServerResponse): void;
  /** The http server's 'upgrade' listener: authenticated WebSocket pass-through. */
  upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void;
  close(): void;
}

const VALID_REQUEST_ID = /^[\w.-]{1,128}$/;

function requestIdOf(req: http.IncomingMessage): string {
  const incoming = req.headers[REQUEST_ID_HEADER];
  return typeof incoming === 'string' && VALID_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

function pathOf(url: string | undefined): string {
  return loggablePath(url ?? '/');
}

/**
 * The gateway's request handling. Proxied `/api/v1` requests — the hot path — are
 * authenticated and handed to the upstream's Forwarder (http/forward.ts) straight from
 * the server's request listener; everything else (health, the OpenAPI document, JSON
 * 404s) is an express app.
 * Why not everything through express: measured on this 2-core machine, express's
 * per-request set-up (request/response prototypes, router walk) cost about 150 µs of CPU
 * per proxied request, as much as the whole proxying; see services/gateway/README.md.
 */
export function createGateway(deps: GatewayDeps): Gateway {
  const { logger, auth, limits, metrics } = deps;
  const proxies = new Map<Upstream, UpstreamProxy>();
  for (const [name, target] of deps.upstreams) proxies.set(name, createUpstreamProxy(name, target, logger, deps.upstreamTimeoutMs));
  const app = createFallbackApp(deps);

  const writeError = (res: http.ServerResponse, status: number, body: Record<string, unknown>): void => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.statusCode = status;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.end(JSON.stringify(body));
  };

  /** Answers with the JSON error body, as the kit's express error handler would. */
  const fail = (res: http.ServerResponse, err: unknown): void => {
    const known = err instanceof PierError ? err : new PierError('internal', 'internal error', 'internal');
    const status = httpStatusOf[known.kind];
    if (status >= 500 && known.kind !== 'unavailable') logger.error({ err, requestId: res.getHeader(REQUEST_ID_HEADER) }, 'unhandled error');
    writeError(res, status, errorBody(known));
  };

  /** Sets the RateLimit-* fields; a refused request is answered 429 here and false returned. */
  const admitted = (res: http.ServerResponse, d: RateDecision, whose: string): boolean => {
    setRateLimitHeaders(res, d);
    if (!d.allowed) {
      deps.metrics?.rateLimited(whose === TOKEN ? 'token' : 'address');
      writeError(res, 429, rateLimitedBody(d, whose));
    }
    return d.allowed;
  };

  const proxyRequest = async (req: http.IncomingMessage, res: http.ServerResponse, target: RouteTarget, path: string, requestId: string): Promise<void> => {
    const token = bearerToken(req.headers.authorization);
    const address = addressKey(clientAddress(req, limits.trustedHops));
    if (token === null) {
      if (admitted(res, limits.addresses.take(address), ADDRESS)) fail(res, missingToken());
      return;
    }
    const charge = chargeFirst(limits, token, address);
    if (!admitted(res, charge.decision, charge.known ? TOKEN : ADDRESS)) return;
    let identity: string;
    try {
      identity = (await auth.authenticate(token, target.workspaceId, target.vpcId)).identity_token;
    } catch (err) {
      return fail(res, err);
    }
    if (!charge.known && !admitted(res, moveToToken(limits, charge.key, address), TOKEN)) return;
    const proxy = proxies.get(target.upstream);
    if (!proxy) return fail(res, new NotFoundError(`no route for ${req.method} ${path}: the ${target.upstream} service is not deployed`, 'route_not_found'));
    // The bearer token stops here (the forwarder drops it); services trust only the
    // identity auth just signed.
    proxy.forwarder.forward(req, res, { requestId, identity });
  };

  // Below level info there is no access log, and no per-request listener for it either.
  const accessLog = logger.isLevelEnabled('info');

  const handle = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const requestId = requestIdOf(req);
    res.setHeader(REQUEST_ID_HEADER, requestId);
    req.headers[REQUEST_ID_HEADER] = requestId;
    const path = pathOf(req.url);
    const target = path === OPENAPI_PATH ? null : routeOf(path);
    if (accessLog || metrics) {
      // The logged path never has its query string: a WebSocket client puts its
      // access_token there, and any client might. One listener for both.
      const start = performance.now();
      res.once('finish', () => {
        const ms = performance.now() - start;
        metrics?.observeRequest(req.method ?? 'GET', target?.upstream ?? 'gateway', res.statusCode, ms / 1000);
        if (accessLog) logger[accessLogLevel(path)]({ requestId, method: req.method, path, status: res.statusCode, ms: Math.round(ms * 100) / 100 }, 'request');
      });
    }
    if (target === null) {
      // The one public /api/v1 path: it counts against the caller's address.
      if (path === OPENAPI_PATH && !admitted(res, limits.addresses.take(addressKey(clientAddress(req, limits.trustedHops))), ADDRESS)) return;
      app(req as Request, res as Response);
      return;
    }
    proxyRequest(req, res, target, path, requestId).catch((err: unknown) => fail(res, err));
  };

  /**
   * WebSocket upgrades: the browser cannot set headers on a handshake, so the token may
   * come as `?access_token=` (or as the usual Authorization header). It is removed from
   * the URL before the request goes upstream, and never logged.
   */
  const upgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => undefined);
    const start = performance.now();
    const requestId = requestIdOf(req);
    req.headers[REQUEST_ID_HEADER] = requestId;
    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const path = q === -1 ? rawUrl : rawUrl.slice(0, q);
    const { token: queryToken, rest: query } = takeAccessToken(q === -1 ? '' : rawUrl.slice(q + 1));
    const done = (status: number) =>
      logger.info({ requestId, method: req.method, path, status, ms: Math.round((performance.now() - start) * 100) / 100, upgrade: true }, 'request');
    // The session counts as one request, at its handshake.
    let limited: RateDecision | undefined;
    const answer = (status: number, body: Record<string, unknown>) => {
      writeSocketError(socket, status, body, requestId, limited && rateLimitHeaders(limited));
      done(status);
    };
    const refuse = (err: PierError) => answer(httpStatusOf[err.kind], errorBody(err));
    const token = queryToken ?? bearerToken(req.headers.authorization);
    const target = routeOf(path);
    if (!target) return refuse(new NotFoundError(`no route for ${req.method} ${path}`, 'route_not_found'));
    const address = addressKey(clientAddress(req, limits.trustedHops));
    if (!token) {
      limited = limits.addresses.take(address);
      return limited.allowed ? refuse(missingToken()) : answer(429, rateLimitedBody(limited, ADDRESS));
    }
    const charge = chargeFirst(limits, token, address);
    limited = charge.decision;
    if (!limited.allowed) return answer(429, rateLimitedBody(limited, charge.known ? TOKEN : ADDRESS));
    auth.authenticate(token, target.workspaceId, target.vpcId).then(
      (who) => {
        if (!charge.known) {
          limited = moveToToken(limits, charge.key, address);
          if (!limited.allowed) return answer(429, rateLimitedBody(limited, TOKEN));
        }
        const proxy = proxies.get(target.upstream);
        if (!proxy) return refuse(new NotFoundError(`no route for ${req.method} ${path}: the ${target.upstream} service is not deployed`, 'route_not_found'));
        req.url = query ? `${path}?${query}` : path;
        delete req.headers.authorization;
        req.headers[IDENTITY_HEADER] = who.identity_token;
        (req as UpgradeRequest)[UPGRADE_DONE] = { answered: false, done, headers: rateLimitHeaders(limited!) };
        proxy.handle.upgrade(req, socket as never, head);
      },
      (err: unknown) => refuse(err instanceof PierError ? err : new PierError('internal', 'internal error', 'internal')),
    );
  };

  return {
    handle,
    upgrade,
    close() {
      for (const p of proxies.values()) p.agent.destroy();
    },
  };
}

const TOKEN = 'this token';
const ADDRESS = 'this address (requests without a valid token)';

function rateLimitedBody(d: RateDecision, whose: string): Record<string, unknown> {
  return { error: `rate limit exceeded for ${whose}: retry in ${d.retryAfter} s`, code: 'rate_limited' };
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
