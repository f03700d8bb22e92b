import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import {
  accessLogLevel,
  errorBody,
  httpStatusOf,
  IDENTITY_HEADER,
  CLIENT_ADDRESS_HEADER,
  loggablePath,
  NotFoundError,
  RECONNECT_CLOSE_CODE,
  RECONNECT_CLOSE_REASON,
  REQUEST_ID_HEADER,
  writeSocketError,
  type Drain,
  type Logger,
} from '@pier/kit';
import type { Authenticates } from './answer-cache.ts';
import type { KeyClaims } from './idempotency-owners.ts';
import { routeOf, type RouteTarget, type Upstream } from './routing.ts';
import { bearerToken } from './http/authenticate.ts';
import { admission, asPierError, refusalAnswer, type RateLimits, type Refusal } from './http/admission.ts';
import { createUpstreamProxy, UPGRADE_DONE, type UpgradeRequest, type UpstreamProxy } from './http/proxy.ts';
import { OPENAPI_PATH } from './http/openapi.ts';
import type { GatewayMetrics } from './http/metrics.ts';
import { takeAccessToken } from './http/access-token.ts';
import { answerError, writeJsonError } from './http/error-response.ts';
import { createFallbackApp } from './http/fallback-app.ts';
import type { ConsoleSignIn } from './http/console-sign-in.ts';
import { addressKey, clientAddress, rateLimitHeaders, setRateLimitHeaders, type RateDecision } from './http/rate-limit.ts';

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
  /** Which service each Idempotency-Key went to first (idempotency-owners.ts); absent without NATS. */
  keyClaims?: KeyClaims;
  /** A graceful stop's state (kit's drain.ts): answers close their connections, streams and sockets end. */
  drain?: Drain;
  /** The built web console served at `/` (http/console.ts); none: only the API. */
  consoleDir?: string;
  /** How the console signs people in with the identity provider (http/console-sign-in.ts); none: token only. */
  consoleSignIn?: ConsoleSignIn;
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
/**
 * A WebSocket passing through a gateway that stops: closed with kit's reconnect code. The
 * gateway does not parse the frames it relays, so the close frame (a server's is unmasked:
 * 0x88, length, code, reason) may land inside one the service was sending; that client then
 * sees a broken socket instead (1006), and reconnects all the same.
 */
function endWithInstance(socket: Duplex, streamsEnd: AbortSignal): void {
  const end = () => {
    const reason = Buffer.from(RECONNECT_CLOSE_REASON);
    const frame = Buffer.concat([Buffer.from([0x88, 2 + reason.length, RECONNECT_CLOSE_CODE >> 8, RECONNECT_CLOSE_CODE & 0xff]), reason]);
    // Still piped to the service: the client's answer to the close ends that side too.
    if (socket.writable) socket.end(frame);
    setTimeout(() => socket.destroy(), 1000).unref();
  };
  if (streamsEnd.aborted) return end();
  streamsEnd.addEventListener('abort', end, { once: true });
  socket.once('close', () => streamsEnd.removeEventListener('abort', end));
}

export function createGateway(deps: GatewayDeps): Gateway {
  const { logger, auth, limits, metrics } = deps;
  const proxies = new Map<Upstream, UpstreamProxy>();
  const streamsEnd = deps.drain?.streamsEnd;
  for (const [name, target] of deps.upstreams) proxies.set(name, createUpstreamProxy(name, target, logger, deps.upstreamTimeoutMs, streamsEnd));
  const admit = admission(auth, limits, proxies, deps.keyClaims);
  const app = createFallbackApp(deps);

  const fail = (res: http.ServerResponse, err: unknown): void => answerError(res, err, logger);

  /** Answers a refused request: its RateLimit-* fields, and the 429 or the error's JSON body. */
  const refuse = (res: http.ServerResponse, r: Refusal): void => {
    setRateLimitHeaders(res, r.limits);
    if (!r.rateLimited) return fail(res, r.error);
    metrics?.rateLimited(r.rateLimited);
    writeJsonError(res, 429, refusalAnswer(r).body);
  };

  const proxyRequest = async (req: http.IncomingMessage, res: http.ServerResponse, target: RouteTarget, requestId: string): Promise<void> => {
    const a = await admit(req, target, bearerToken(req.headers.authorization));
    if (!a.admitted) return refuse(res, a);
    setRateLimitHeaders(res, a.limits);
    // The bearer token stops here (the forwarder drops it); services trust only the
    // identity auth just signed.
    a.proxy.forwarder.forward(req, res, { requestId, identity: a.identity, clientAddress: clientAddress(req, limits.trustedHops) });
  };

  // Below level info there is no access log, and no per-request listener for it either.
  const accessLog = logger.isLevelEnabled('info');

  const handle = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const requestId = requestIdOf(req);
    res.setHeader(REQUEST_ID_HEADER, requestId);
    // Stopping: the client's next request opens a connection, to another gateway.
    if (deps.drain?.draining) res.setHeader('connection', 'close');
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
      if (path === OPENAPI_PATH) {
        const decision = limits.addresses.take(addressKey(clientAddress(req, limits.trustedHops)));
        if (!decision.allowed) return refuse(res, { admitted: false, limits: decision, rateLimited: 'address' });
        setRateLimitHeaders(res, decision);
      }
      app(req as Request, res as Response);
      return;
    }
    proxyRequest(req, res, target, requestId).catch((err: unknown) => fail(res, err));
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
    const answer = (status: number, body: Record<string, unknown>, limits?: RateDecision) => {
      writeSocketError(socket, status, body, requestId, limits && rateLimitHeaders(limits));
      done(status);
    };
    const target = routeOf(path);
    const answerError = (err: unknown) => {
      const known = asPierError(err);
      answer(httpStatusOf[known.kind], errorBody(known));
    };
    if (!target) return answerError(new NotFoundError(`no route for ${req.method} ${path}`, 'route_not_found'));
    // The session counts as one request, at its handshake.
    admit(req, target, queryToken ?? bearerToken(req.headers.authorization)).then(
      (a) => {
        if (!a.admitted) {
          const { status, body } = refusalAnswer(a);
          return answer(status, body, a.limits);
        }
        req.url = query ? `${path}?${query}` : path;
        delete req.headers.authorization;
        req.headers[IDENTITY_HEADER] = a.identity;
        req.headers[CLIENT_ADDRESS_HEADER] = clientAddress(req, limits.trustedHops);
        (req as UpgradeRequest)[UPGRADE_DONE] = { answered: false, done, headers: rateLimitHeaders(a.limits) };
        if (streamsEnd) endWithInstance(socket, streamsEnd);
        a.proxy.handle.upgrade(req, socket as never, head);
      },
      (err: unknown) => answerError(err),
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
