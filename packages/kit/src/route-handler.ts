import type { Request, Response, NextFunction } from 'express';
import type { Readable } from 'node:stream';
import type { Logger } from './logger.ts';
import { PierError, InputError } from './errors.ts';
import { IDENTITY_HEADER, type IdentityVerifier } from './identity.ts';
import { IDEMPOTENCY_KEY_HEADER, idempotencyKeyOf, type IdempotencyKeys } from './idempotency.ts';
import { checkScope, type Route, type RouteResult } from './route.ts';
import { parseWith, refuseNul } from './request-parsing.ts';
import { hasNoBody, rawBodyOf } from './request-body.ts';
import { answerIdempotently } from './route-idempotency.ts';
import { writeEvents } from './sse.ts';
import { requestContextOf, runWithRequestContext } from './request-context.ts';
import type { UpgradeRoute } from './upgrade.ts';
import type { Drain } from './drain.ts';

// The express handlers of a service's routes: the caller checked, the request parsed
// against the route's contract, the handler's answer sent. Internal to the app
// (service-app.ts); not exported from the kit.

/** What a route's handler needs of the app's options (ServiceAppOptions). */
export interface RouteHandlerDeps {
  logger: Logger;
  verifier: IdentityVerifier;
  idempotency?: IdempotencyKeys;
  keepAliveMs?: number;
  /** Set when the instance stops (drain.ts): an event stream then ends with a `reconnect` event. */
  drain?: Drain;
}

export function routeHandler(route: Route, deps: RouteHandlerDeps) {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      const identityToken = req.header(IDENTITY_HEADER) ?? '';
      const identity = await deps.verifier.verify(identityToken);
      const rawParams = req.params as Record<string, string>;
      checkScope(identity, rawParams, route.access);
      const params = route.params ? parseWith(route.params, rawParams, 'path') : rawParams;
      const query = route.query ? parseWith(route.query, req.query, 'query') : {};
      refuseNul(query, 'query');
      let body: unknown = undefined;
      let stream: Readable | undefined;
      if (route.rawBody) stream = rawBodyOf(req, route.rawBody);
      else if (route.body) {
        // No body at all reads as `{}`, so routes whose fields all have defaults can be
        // called bare; a body that is there but not JSON is refused.
        const sent = req.body ?? (hasNoBody(req) ? {} : undefined);
        if (sent === undefined) throw new InputError('request body must be JSON (Content-Type: application/json)', 'invalid_request');
        body = parseWith(route.body, sent, 'body');
        refuseNul(body, 'body');
      }
      const log = res.locals.log as Logger;
      const gone = new AbortController();
      res.once('close', () => gone.abort());
      const lastEventId = req.header('last-event-id');
      const input = { params, query, body, identity, identityToken, requestId: res.locals.requestId, log, signal: gone.signal, stream, lastEventId };
      const key = route.method !== 'get' && route.access !== 'Service' ? idempotencyKeyOf(req.header(IDEMPOTENCY_KEY_HEADER)) : undefined;
      // Events written while the request runs name its caller and address (request-context.ts).
      const result = await runWithRequestContext(requestContextOf(identity, req.headers), () =>
        key !== undefined && deps.idempotency
          ? answerIdempotently({ keys: deps.idempotency, key, logger: deps.logger }, route, req, res, input)
          : route.handler(input),
      );
      await send(res, result, gone, deps);
    } catch (err) {
      // The first attempt is still running: a client that retries learns when to try again.
      if (err instanceof PierError && err.code === 'idempotency_key_in_use') res.set('retry-after', '1');
      next(err);
    }
  };
}

/** A plain GET of a WebSocket route: 426, once the caller is known to be allowed. */
export function upgradeRequiredHandler(u: UpgradeRoute, verifier: IdentityVerifier) {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      // The caller is checked first, as on the handshake: a Viewer learns 403, not how to upgrade.
      checkScope(await verifier.verify(req.header(IDENTITY_HEADER) ?? ''), req.params as Record<string, string>, u.access);
      res
        .status(426)
        .set('upgrade', 'websocket')
        .json({ error: 'this endpoint upgrades to a WebSocket (Connection: Upgrade, Upgrade: websocket)', code: 'upgrade_required' });
    } catch (err) {
      next(err);
    }
  };
}

async function send(res: Response, result: RouteResult, gone: AbortController, deps: RouteHandlerDeps): Promise<void> {
  if (result.headers) res.set(result.headers);
  if (result.events) await writeEvents(res, result.status, result.events, gone, deps.keepAliveMs ?? 15_000, deps.drain?.streamsEnd);
  else if (result.body === undefined) res.status(result.status).end();
  else res.status(result.status).json(result.body);
}
