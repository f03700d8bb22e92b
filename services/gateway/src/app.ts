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
import type { AuthClient } from './auth-client.ts';
import { routeOf, type RouteTarget, type Upstream } from './routing.ts';
import { bearerToken, missingToken } from './http/authenticate.ts';
import { createUpstreamProxy, UPGRADE_DONE, type UpgradeRequest, type UpstreamProxy } from './http/proxy.ts';
import { OPENAPI_PATH } from './http/openapi.ts';
import { takeAccessToken } from './http/access-token.ts';
import { createFallbackApp } from './http/fallback-app.ts';

export interface GatewayDeps {
  logger: Logger;
  auth: AuthClient;
  /** Base URL of each routed service; a service that is absent is not routed. */
  upstreams: Map<Upstream, string>;
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
 * authenticated and handed to http-proxy-middleware straight from the server's request
 * listener; everything else (health, the OpenAPI document, JSON 404s) is an express app.
 * Why not everything through express: measured on this 2-core machine, express's
 * per-request set-up (request/response prototypes, router walk) cost about 150 µs of CPU
 * per proxied request, as much as the whole proxying; see services/gateway/README.md.
 */
export function createGateway(deps: GatewayDeps): Gateway {
  const { logger, auth } = deps;
  const proxies = new Map<Upstream, UpstreamProxy>();
  for (const [name, target] of deps.upstreams) proxies.set(name, createUpstreamProxy(name, target, logger));
  const app = createFallbackApp(deps);

  /** Answers with the JSON error body, as the kit's express error handler would. */
  const fail = (res: http.ServerResponse, err: unknown): void => {
    const known = err instanceof PierError ? err : new PierError('internal', 'internal error', 'internal');
    const status = httpStatusOf[known.kind];
    if (status >= 500 && known.kind !== 'unavailable') logger.error({ err, requestId: res.getHeader(REQUEST_ID_HEADER) }, 'unhandled error');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.statusCode = status;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.end(JSON.stringify(errorBody(known)));
  };

  const proxyRequest = async (req: http.IncomingMessage, res: http.ServerResponse, target: RouteTarget, path: string): Promise<void> => {
    const token = bearerToken(req.headers.authorization);
    if (token === null) return fail(res, missingToken());
    let identity: string;
    try {
      identity = (await auth.authenticate(token, target.workspaceId, target.vpcId)).identity_token;
    } catch (err) {
      return fail(res, err);
    }
    const proxy = proxies.get(target.upstream);
    if (!proxy) return fail(res, new NotFoundError(`no route for ${req.method} ${path}: the ${target.upstream} service is not deployed`, 'route_not_found'));
    // The bearer token stops here; services trust only the identity auth just signed.
    delete req.headers.authorization;
    req.headers[IDENTITY_HEADER] = identity;
    await proxy.handle(req, res, (err?: unknown) => fail(res, err));
  };

  // Below level info there is no access log, and no per-request listener for it either.
  const accessLog = logger.isLevelEnabled('info');

  const handle = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const requestId = requestIdOf(req);
    res.setHeader(REQUEST_ID_HEADER, requestId);
    req.headers[REQUEST_ID_HEADER] = requestId;
    const path = pathOf(req.url);
    if (accessLog) {
      // The logged path never has its query string: a WebSocket client puts its
      // access_token there, and any client might.
      const start = performance.now();
      res.once('finish', () => {
        logger[accessLogLevel(path)](
          { requestId, method: req.method, path, status: res.statusCode, ms: Math.round((performance.now() - start) * 100) / 100 },
          'request',
        );
      });
    }
    const target = path === OPENAPI_PATH ? null : routeOf(path);
    if (target === null) {
      app(req as Request, res as Response);
      return;
    }
    proxyRequest(req, res, target, path).catch((err: unknown) => fail(res, err));
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
    const refuse = (err: PierError) => {
      const status = httpStatusOf[err.kind];
      writeSocketError(socket, status, errorBody(err), requestId);
      done(status);
    };
    const token = queryToken ?? bearerToken(req.headers.authorization);
    const target = routeOf(path);
    if (!target) return refuse(new NotFoundError(`no route for ${req.method} ${path}`, 'route_not_found'));
    if (!token) return refuse(missingToken());
    auth.authenticate(token, target.workspaceId, target.vpcId).then(
      (who) => {
        const proxy = proxies.get(target.upstream);
        if (!proxy) return refuse(new NotFoundError(`no route for ${req.method} ${path}: the ${target.upstream} service is not deployed`, 'route_not_found'));
        req.url = query ? `${path}?${query}` : path;
        delete req.headers.authorization;
        req.headers[IDENTITY_HEADER] = who.identity_token;
        (req as UpgradeRequest)[UPGRADE_DONE] = { answered: false, done };
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
