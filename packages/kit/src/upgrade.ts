import type http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { z } from 'zod';
import { RECONNECT_CLOSE_CODE, RECONNECT_CLOSE_REASON } from './drain.ts';
import type { Logger } from './logger.ts';
import type { Requirement } from './roles.ts';
import { IDENTITY_HEADER, type Identity, type IdentityVerifier } from './identity.ts';
import { PierError, errorBody, httpStatusOf } from './errors.ts';
import { checkScope } from './route.ts';
import { requestContextOf, runWithRequestContext } from './request-context.ts';
import { parseWith, refuseNul } from './request-parsing.ts';
import { loggablePath, REQUEST_ID_HEADER } from './middleware.ts';
import { writeSocketError } from './socket-response.ts';

// WebSocket routes of a service (a shell): the same contract as a JSON route — identity,
// role, zod-checked path and query — judged on the handshake, so a caller who may not, or
// a request the service refuses, gets an ordinary JSON error and never a socket.

export interface UpgradeInput<P, Q> {
  params: P;
  query: Q;
  identity: Identity;
  requestId: string;
  log: Logger;
}

// `any` defaults: a list of routes holds routes of every shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface UpgradeRoute<P = any, Q = any, S = any> {
  /** Path template, `{name}` for parameters, as for JSON routes. */
  path: string;
  summary: string;
  tag: string;
  access: Requirement;
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  /**
   * The largest message the socket takes, in bytes (default 1 MiB); a bigger one closes it
   * with 1009. ws would otherwise take 100 MiB, held in memory whole before it is handed over.
   */
  maxPayload?: number;
  /** The handshake's answers (101 and the refusals), for the OpenAPI document. */
  responses: Record<number, { description: string; schema?: z.ZodType }>;
  /** Before the handshake: what it throws is answered as JSON and nothing is upgraded. */
  accept(input: UpgradeInput<P, Q>): Promise<S>;
  /** After the handshake, with the open socket and what `accept` returned. */
  connected(socket: WebSocket, session: S, input: UpgradeInput<P, Q>): void;
}

export function defineUpgrade<P, Q, S>(route: UpgradeRoute<P, Q, S>): UpgradeRoute<P, Q, S> {
  return route;
}

function matcher(path: string): { test: RegExp; names: string[] } {
  const names: string[] = [];
  const pattern = path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{(\w+)\\?\}/g, (_m, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { test: new RegExp(`^${pattern}$`), names };
}

/** A query string as zod sees query parameters elsewhere: a repeated key is an array. */
function queryObject(search: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of new URLSearchParams(search)) {
    const seen = out[key];
    out[key] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return out;
}

export interface UpgradeHandler {
  /** The HTTP server's `upgrade` listener for these routes; any other path is a JSON 404. */
  listener(req: http.IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Ends every open socket, telling its client to reconnect (a server does not close while upgraded sockets stay open). */
  close(): void;
}

/** What an upgrade route's socket takes in one message unless the route says otherwise. */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

export function upgradeHandler(opts: { routes: UpgradeRoute[]; verifier: IdentityVerifier; logger: Logger }): UpgradeHandler {
  // One server per route: the message size limit is the server's.
  const compiled = opts.routes.map((route) => ({
    route,
    wss: new WebSocketServer({ noServer: true, maxPayload: route.maxPayload ?? DEFAULT_MAX_PAYLOAD }),
    ...matcher(route.path),
  }));
  const listener = (req: http.IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => undefined);
    const started = performance.now();
    const incoming = req.headers[REQUEST_ID_HEADER];
    const requestId = typeof incoming === 'string' && /^[\w.-]{1,128}$/.test(incoming) ? incoming : randomUUID();
    const url = req.url ?? '/';
    const path = loggablePath(url);
    const log = opts.logger.child({ requestId });
    // The query string may carry a token: the access log has the path only.
    const done = (status: number) =>
      log.info({ method: req.method, path, status, ms: Math.round((performance.now() - started) * 100) / 100, upgrade: true }, 'request');
    const refuse = (err: unknown) => {
      const known = err instanceof PierError ? err : new PierError('internal', 'internal error', 'internal');
      if (known.kind === 'internal') log.error({ err }, 'upgrade failed');
      const status = httpStatusOf[known.kind];
      writeSocketError(socket, status, errorBody(known), requestId);
      done(status);
    };
    const found = compiled.map((c) => ({ ...c, m: c.test.exec(path) })).find((c) => c.m);
    if (!found) return refuse(new PierError('not_found', `no route for ${req.method} ${path}`, 'route_not_found'));
    const { route, wss, names, m } = found;
    (async () => {
      const identity = await opts.verifier.verify(req.headers[IDENTITY_HEADER] as string | undefined);
      const rawParams = Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(m![i + 1]!)]));
      checkScope(identity, rawParams, route.access);
      const params = route.params ? parseWith(route.params, rawParams, 'path') : rawParams;
      const rawQuery = queryObject(url.includes('?') ? url.slice(url.indexOf('?') + 1) : '');
      const query = route.query ? parseWith(route.query, rawQuery, 'query') : rawQuery;
      refuseNul(query, 'query');
      const input = { params, query, identity, requestId, log };
      // A session's events (a shell's start and end) name its caller and address.
      await runWithRequestContext(requestContextOf(identity, req.headers), async () => {
        const session = await route.accept(input);
        wss.handleUpgrade(req, socket, head, (ws) => {
          done(101);
          route.connected(ws, session, input);
        });
      });
    })().catch(refuse);
  };
  return {
    listener,
    close() {
      for (const { wss } of compiled) {
        for (const ws of wss.clients) {
          ws.close(RECONNECT_CLOSE_CODE, RECONNECT_CLOSE_REASON);
          setTimeout(() => ws.terminate(), 1000).unref();
        }
        wss.close();
      }
    },
  };
}
